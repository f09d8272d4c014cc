"""Dashboard "Where memory fails": how many pairs a fixed-size state keeps apart.

Five parts, one store (`model.MemoryStore`, one per session):

1. the capacity curve: N pairs written into one head (sum, delta or gated delta rule) and every key
   read back; recall error against the closed-form bound ½·max(0, 1 − d_k/N) of Schlag, Irie &
   Schmidhuber 2021, and the share of recalls that come out right;
2. one N query by query: a query's read-out taken apart into what each stored pair contributes;
3. the trained MQAR models (assets/checkpoints) on one example, query by query, and their accuracy
   over held-out examples (counted on a worker thread, then shared by every session);
4. one trained answer taken apart, layer by layer, into what each earlier write puts into its read-out
   (`forensics.py`: exact, since the state is linear in the writes);
5. the accuracy over d_k × N for the rule, with the delta rules' β and the gated rule's α.

`model.py` and `forensics.py` compute and store (no Panel, no Bokeh: testable without a server);
`view.py` arranges the page (`details.py` draws parts 4 and 5) and draws the store into `pictures.py`'s
Bokeh figures, whose data sources are patched in place (the capacity curves too: the pairs slider
redraws them while it is dragged; app/README.md says what a HoloViews redraw cost instead).
"""
