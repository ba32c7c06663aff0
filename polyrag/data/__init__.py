"""Question and passage selection: loaders per source, one record format, one Parquet layout."""
