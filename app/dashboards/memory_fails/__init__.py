"""Dashboard "Where memory fails": how many pairs a fixed-size state keeps apart.

Three parts, one store (`model.MemoryStore`, one per session):

1. the capacity curve: N pairs written into one head (sum, delta or gated delta rule) and every key
   read back; recall error against the closed-form bound ½·max(0, 1 − d_k/N) of Schlag, Irie &
   Schmidhuber 2021, and the share of recalls that come out right;
2. one N query by query: a query's read-out taken apart into what each stored pair contributes;
3. the trained MQAR models (assets/checkpoints) on one example, query by query, and their accuracy
   over held-out examples (counted on a worker thread, then shared by every session).

`model.py` computes and stores (no Panel, no Bokeh: testable without a server); `view.py` arranges
the page and draws the store into `pictures.py`'s Bokeh figures, whose data sources are patched in
place (the capacity curves too: the pairs slider redraws them while it is dragged; app/README.md
says what a HoloViews redraw cost instead).
"""
