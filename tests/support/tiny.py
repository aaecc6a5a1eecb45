"""What the tiny data set (conftest's TINY_DOCS, TINY_SERVES) is made of, by name."""

RETRY, FLAKY = "q-b7e6435437bb", "q-c14ba69966ec"  # the tiny set's two queries (their qids are stable)
