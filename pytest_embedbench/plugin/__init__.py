"""The pytest layer: hooks (wiring only; the entry point), cases (markers + yaml + options ->
typed cases), session (one run), finish (the end of the run), gatekeeper (thresholds, baseline
gate), xdist (schedulers), handle (the embedbench fixture), assertrepr, hookspec, exitcodes.
"""
