"""Dashboard "Parallel = recurrent": one input, three forms, the same numbers.

A linear-attention layer computed token by token (recurrent), all at once with a T × T decay mask
(parallel), or in chunks (the parallel form inside a block, the state across blocks) gives the same
output up to rounding; what differs is the order of the work (how many steps must wait for each
other: T, ⌈T/C⌉ or 1) and the cost as the sequence grows. The page opens with the three outputs half
filled, each in its form's order, and the player steps through them.

- `model.py`: `FormsStore` (one per session) draws a seeded random input for the chosen variant with
  the gates of its default knobs (`engine.gates.make_gates`), runs the three forms in float32 and
  float64 and keeps the outputs, their differences and the decay mask L. It measures the cost curve
  on request on the `MEASURER` worker thread (a time budget, one measurement at a time per process)
  and caches it per (variant, chunk size); `answered` says which tokens each form has computed after
  each step, `counted_work` the multiply-adds of each form. No Panel, no Bokeh: testable without a server.
- `pictures.py`: the mask, the counted and the measured cost (Bokeh) and the table of differences.
- `view.py`: `FormsView` draws the store and only watches it.
"""
