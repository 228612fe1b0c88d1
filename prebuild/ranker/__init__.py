"""The learned second stage's trainer (`python -m prebuild.ranker.train`, `make ranker`)."""
