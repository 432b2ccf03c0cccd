"""What a model's tokens cost (`[prices."PROVIDER/MODEL"]`), and money as it is counted.

A cost is an integer number of nanos, billionths of the currency's unit: exact sums in
the counters, and room for 9 billion units. A price is per million tokens, so a token
costs `price x 1000` nanos; an answer's cost is rounded to the nearest nano once.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from agentsvc.config import Settings
from agentsvc.llm.base import BUILTIN, split_model_id

NANOS = 10**9
DEFAULT_CURRENCY = "USD"


def to_nanos(amount: Decimal | float | int) -> int:
    """An amount of the currency as nanos (rounded to the nearest)."""
    value = Decimal(str(amount)) * NANOS
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def from_nanos(nanos: int) -> float:
    """Nanos as an amount of the currency (what the API shows)."""
    return float(Decimal(nanos) / NANOS)


def currency_of(settings: Settings) -> str:
    """The currency of the server's prices (one for all: config.py checks), else USD."""
    first = next(iter(settings.prices.values()), None)
    return first.currency if first is not None else DEFAULT_CURRENCY


def priced_model(settings: Settings, model_id: str) -> bool:
    """Whether a price's model id names a model this server can use: `builtin`, or
    PROVIDER/MODEL of a configured provider."""
    if model_id == BUILTIN:
        return True
    provider, model = split_model_id(model_id)
    return bool(model) and provider in settings.providers


class PriceBook:
    """The prices of the models this server offers; the others are listed in `ignored`."""

    def __init__(self, settings: Settings):
        self.currency = currency_of(settings)
        self.ignored = sorted(m for m in settings.prices if not priced_model(settings, m))
        # Nanos per token (a Decimal: a price of 0.0001 per million is 0.1 nano a token).
        self._per_token = {
            model: (
                Decimal(str(price.input_per_million)) * 1000,
                Decimal(str(price.output_per_million)) * 1000,
            )
            for model, price in settings.prices.items()
            if model not in self.ignored
        }

    def has_price(self, model_id: str) -> bool:
        return model_id in self._per_token

    def cost_nanos(self, model_id: str, input_tokens: int, output_tokens: int) -> int | None:
        """What an answer's tokens cost in nanos; None when the model has no price."""
        per_token = self._per_token.get(model_id)
        if per_token is None:
            return None
        cost = input_tokens * per_token[0] + output_tokens * per_token[1]
        return int(cost.to_integral_value(rounding=ROUND_HALF_UP))

    def warnings(self) -> list[str]:
        """What start-up logs about the prices it ignores."""
        return [
            f'prices."{model}": no configured provider serves this model (ids are "builtin"'
            " or PROVIDER/MODEL of a [providers.NAME] table); its price is ignored"
            for model in self.ignored
        ]
