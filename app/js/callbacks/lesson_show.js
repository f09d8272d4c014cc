// A lesson file's player (app/export/lesson.py): show frame t (picture, caption, step).
// Args: slider, picture, caption, where, frames, captions, step_text, image.
const t = Math.round(slider.value)
picture.text = image.replace("{src}", frames[t]).replace("{t}", t)
caption.text = captions[t]
where.text = step_text.replace("{t}", t + 1).replace("{n}", frames.length)
document.body.dataset.lineareFrame = String(t)
