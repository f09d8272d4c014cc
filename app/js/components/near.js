export function render({ model, el }) {
  const block = document.createElement("div")
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
  model.on("remove", () => { observer.disconnect(); sizes.disconnect() })
}
