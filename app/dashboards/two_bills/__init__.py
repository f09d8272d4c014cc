"""Dashboard "Two bills": what softmax attention pays while it generates, against a fixed-size state.

Two stores per session, two parts of the page:

- `model.GenerationStore` (mechanism mode): one softmax layer and one fixed-state layer (linear
  attention, RetNet or Mamba-2) read the same random tokens (512 when the page opens: the cache
  already leads) and then generate new ones, one at a time, through `engine.stepping.step`. The
  bytes come from the engine's records (the KV cache grows by one key and one value per token, the
  state stays flat); the work is counted in multiply-adds (`multiply_adds`: a triangle of softmax
  rows against a strip of state rows); the time of every step is measured, the shortest of three
  runs. A run takes up to seconds, so it is measured on a worker thread.
- `calculator.CalculatorStore`: the same two bills for real model shapes, in closed form.

`view.py` arranges the page and draws the generation race, `calculator_view.py` the calculator;
`pictures.py` holds what they share: the bills, the work bill's picture, and the two charts that
change only when a knob moves (Bokeh data sources patched in place, like the per-token curves).
"""
