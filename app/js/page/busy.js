// A page whose websocket the server closes as busy (app/server/building.py: code 1013, too many pages waiting to be
// built) fails to load its session, and Bokeh says why only in the console: this says it on the page.
// Settings: {code, words: {busy, again}}, in the page's language.
(function () {
const busySettings = JSON.parse(document.getElementById("lineare-busy-settings").textContent);
window.WebSocket = class extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.addEventListener("close", function (event) {
      if (event.code !== busySettings.code || document.querySelector(".lineare-busy")) { return; }
      var words = busySettings.words, line = document.createElement("p"), again = document.createElement("a");
      line.className = "lineare-busy"; line.setAttribute("role", "alert");
      line.style.cssText = "font-size: 20px; margin: 16px; padding: 12px 16px; border: 2px solid #b44d12; " +
        "border-radius: 6px; background: #fffbea; color: #102a43;";
      again.href = location.href; again.textContent = words.again; again.style.marginLeft = "12px";
      line.append(words.busy, again);
      (document.getElementById("main") || document.body).prepend(line);
    });
  }
};
})();
