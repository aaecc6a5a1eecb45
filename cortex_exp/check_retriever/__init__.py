"""`python -m cortex_exp.check_retriever TARGET`: check a retriever of your own (a class path)
or a search service (a URL) against the retriever contract before a run trusts it."""
