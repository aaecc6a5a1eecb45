"""`python -m cortex_exp.plan create ...` (docs/decisions.md): the name of the command that
records a plan. Plans and decisions are one subpackage, `cortex_exp.compare.plans`."""
