"""Usage and costs: prices, counters written with each answer, reports, monthly budgets."""
