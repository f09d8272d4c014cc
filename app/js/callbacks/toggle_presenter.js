// Presenter mode on or off: the same page reloaded with ?present= changed. Args: present.
const url = new URL(window.location.href);
url.searchParams.set("present", present ? "0" : "1");
window.location.assign(url.toString());
