// A section's marker (app/components/later.py): its height until the section is made; it says once that it came
// near the window, or that the keyboard reached it (a Tab, or a screen reader's cursor that moves the focus), and
// the server makes the section. Reached by the keyboard, the focus then goes on into the section where the marker
// was, so that the next Tab is the section's first control, not the page's first.
export function render({ model, el }) {
  const block = document.createElement("div")
  block.className = "marker"
  block.tabIndex = 0
  block.setAttribute("role", "button")
  block.textContent = model.label
  el.appendChild(block)
  const fit = () => {
    const points = model.heights, width = el.clientWidth
    let height = points[points.length - 1][1]
    for (let i = 0; i < points.length; i++) {
      const [w, h] = points[i]
      if (width <= w) {
        const [w0, h0] = i === 0 ? [w, h] : points[i - 1]
        height = w === w0 ? h : h0 + (h - h0) * (width - w0) / (w - w0)
        break
      }
    }
    block.style.height = `${Math.round(height)}px`
  }
  fit()
  const sizes = new ResizeObserver(fit)
  sizes.observe(el)
  model.on("heights", fit)
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) { observer.disconnect(); model.seen = true }
  }, { rootMargin: "100% 0px" })
  observer.observe(el)

  // the section's column: this marker's element is one of its children (each a Bokeh view's element)
  const host = el.getRootNode().host
  const column = host && host.getRootNode().host
  let reached = false
  const reach = () => { reached = true; model.seen = true }
  block.addEventListener("focus", reach)
  block.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); reach() }
  })
  // once the section is in the column, the focus that was lost with the marker goes to its first part
  function handOn(tries) {
    const lost = document.activeElement === null || document.activeElement === document.body
    const root = column && column.shadowRoot
    const first = root ? [...root.children].find((child) => child !== host && /(^| )bk-/.test(child.className) &&
                                                 child.getClientRects().length > 0) : null
    if (!lost || tries <= 0) { return }
    if (!first) { setTimeout(() => handOn(tries - 1), 100); return }
    if (!first.hasAttribute("tabindex")) { first.tabIndex = -1 }       // focusable from here, not by Tab
    if (window.lineareTidy) { window.lineareTidy() }   // its widgets named and its pictures' layers out of the Tab order now
    first.focus({ preventScroll: true })
  }
  model.on("remove", () => {
    observer.disconnect(); sizes.disconnect()
    if (reached) { setTimeout(() => handOn(100), 0) }
  })
}
