// contam view, the report page while the report is being built: the server answers 202 until it
// is ready; ask again every second, then show it.
"use strict";

async function waitForReport() {
  try {
    const response = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
    if (response.status !== 202) {
      location.reload();
      return;
    }
  } catch (error) {
    // the server restarting: keep asking
  }
  setTimeout(waitForReport, 1000);
}

setTimeout(waitForReport, 1000);
