"""Chapter 08's ordering checker. It lives in :mod:`asynctc.models.ordering`, beside chapter 05's
ring model, because chapter 06's consumer-loop exercise uses it too; this module is its name in
chapter 08 (``from asynctc.pitfalls import ordering``)."""

from ..models.ordering import (_INT_ARG, _EXAMPLE, OP_FORMS, OPS, PROGRAMS, Hazard, _steps,  # noqa: F401
                               check, describe_ops, form)
