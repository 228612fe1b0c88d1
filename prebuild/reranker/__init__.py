"""The project's cross-encoder reranker: mine, train, export, calibrate (build.sh, `make reranker`)."""
