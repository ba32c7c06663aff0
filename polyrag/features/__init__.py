"""Answer features: MIRAGE-BENCH heuristics and BERGEN metrics, one column per feature."""
