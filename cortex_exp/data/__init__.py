"""Loading and validating the inputs: `jsonl` (file:line problems), `corpus` (documents,
hashes, fingerprint), `servelog` (the only module that parses verdicts)."""
