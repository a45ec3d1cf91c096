"""Declared hyper-parameters: each is stated once, with its default and its check.

A policy class declares its keyword arguments as annotated class attributes, the way
scikit-learn's ``_parameter_constraints`` states the valid values (here with the default
beside them, so one line holds all there is to know about a parameter):

    class LinUCB(ContextualPolicy):
        nu: float = param(Real(low=0.0), default=1.0)
        lam: float = param(POSITIVE, default=1.0)

and gets the keyword-only constructor ``LinUCB(*, nu=1.0, lam=1.0, seed=0)``: every
argument is checked by its constraint and stored, as checked, under its own name; the
class's ``_resolve`` then checks what involves several parameters and derives what the
parts need. Subclasses inherit their bases' declarations and add their own; declaring an
inherited name again replaces it in place (another default or check), and
``fixed(value)`` (or the class decorator ``pin(name=value, ...)``) takes it out of the
constructor and pins its value (a variant that the
paper defines by one setting, such as NLDB's unit weights). A class's new parameters come
before those it inherits, and ``seed`` last. An
annotated attribute of the learned state is declared with ``learned()`` (it is no
parameter).

Type checkers see the constructor too: :class:`DeclaredMeta` is a ``dataclass_transform``
metaclass, so ``LinUCB(nu="a")`` is a type error before it is a run-time one.

Constraints (each returns the value as stored, or raises a one-line ``ValueError`` /
``TypeError`` naming the parameter, its valid values and the value, through
``core.validation``):

    Real(low, high, low_open, high_open)    a finite float in the interval
    Int(low, high, even)                    an int in [low, high] (even if asked)
    Choice(options)                         one of the strings
    Flag()                                  a bool
    Maybe(check)                            None, or what ``check`` accepts
    NoneOnly(why)                           None only (a variant that takes no value)
    AsGiven(check)                          what ``check`` accepts, stored unconverted
    Free()                                  anything; ``_resolve`` looks at it
    Check(function)                         ``function(name, value)`` returns or raises
"""

from __future__ import annotations

import inspect
import sys
from abc import ABCMeta
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import numpy as np

from banditkit.core.validation import (
    ArgumentTypeError,
    check_choice,
    check_int,
    check_scalar,
)

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10
    from typing_extensions import dataclass_transform

_Init = TypeVar("_Init", bound=Callable[..., None])
_Class = TypeVar("_Class", bound=type)

__all__ = [
    "POSITIVE",
    "UNIT",
    "AsGiven",
    "Check",
    "Choice",
    "Constraint",
    "DeclaredMeta",
    "Flag",
    "Free",
    "Int",
    "Maybe",
    "NoneOnly",
    "Param",
    "Real",
    "declared",
    "fixed",
    "learned",
    "param",
    "pin",
    "quiet_defaults",
    "set_params",
    "stored_params",
    "takes_declared",
]


class Constraint:
    """The valid values of one parameter: ``check(name, value)`` returns what is stored."""

    def check(self, name: str, value: Any) -> Any:
        """``value`` as stored, or a ``ValueError`` / ``TypeError`` naming ``name``."""
        raise NotImplementedError


@dataclass(frozen=True)
class Real(Constraint):
    """A finite float in the interval (``core.validation.check_scalar``).

    Example:
        >>> Real(low=0.0).check("nu", 1)
        1.0
        >>> Real(low=0.0, low_open=True).check("lam", 0.0)
        Traceback (most recent call last):
        ...
        ValueError: lam must be a float in (0, inf); got 0.0.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def check(self, name: str, value: Any) -> float:
        """The value as a Python float."""
        return check_scalar(
            name,
            value,
            low=self.low,
            high=self.high,
            low_open=self.low_open,
            high_open=self.high_open,
        )


#: A float > 0 (regularisers, step sizes, scales).
POSITIVE = Real(low=0.0, low_open=True)
#: A float in [0, 1] (rates, probabilities).
UNIT = Real(low=0.0, high=1.0)


@dataclass(frozen=True)
class Int(Constraint):
    """An int in [low, high] (``core.validation.check_int``); ``even``: divisible by 2.

    Example:
        >>> Int(low=2, even=True).check("width", 3)
        Traceback (most recent call last):
        ...
        ValueError: width must be an even int >= 2; got 3.
    """

    low: int | None = None
    high: int | None = None
    even: bool = False

    def check(self, name: str, value: Any) -> int:
        """The value as a Python int."""
        value = check_int(name, value, low=self.low, high=self.high)
        if self.even and value % 2:
            raise ValueError(
                f"{name} must be an even int >= {self.low}; got {value!r}."
            )
        return value


@dataclass(frozen=True, init=False)
class Choice(Constraint):
    """One of a few strings (``core.validation.check_choice``, with a suggestion).

    Example:
        >>> Choice("full", "diagonal").check("gram", "ful")
        Traceback (most recent call last):
        ...
        ValueError: gram must be one of 'full', 'diagonal'; got 'ful'. Did you mean 'full'?
    """

    options: tuple[str, ...]

    def __init__(self, *options: str | Iterable[str]) -> None:
        flat: list[str] = []
        for option in options:
            flat.extend([option] if isinstance(option, str) else option)
        object.__setattr__(self, "options", tuple(flat))

    def check(self, name: str, value: Any) -> str:
        """The value, one of the options."""
        return check_choice(name, value, self.options)


@dataclass(frozen=True)
class Flag(Constraint):
    """A bool (NumPy's included, stored as a Python bool).

    Example:
        >>> Flag().check("grouped", 1)
        Traceback (most recent call last):
        ...
        banditkit.core.validation.ArgumentTypeError: grouped must be a bool; got 1.
    """

    def check(self, name: str, value: Any) -> bool:
        """The value as a Python bool."""
        if not isinstance(value, bool | np.bool_):
            raise ArgumentTypeError(f"{name} must be a bool; got {value!r}.")
        return bool(value)


@dataclass(frozen=True)
class Maybe(Constraint):
    """None (the parameter's "unset": a default resolved later), or a value ``inner`` accepts.

    Example:
        >>> Maybe(Real(low=0.0)).check("lr", None) is None
        True
    """

    inner: Constraint

    def check(self, name: str, value: Any) -> Any:
        """None, or the inner check's value."""
        return None if value is None else self.inner.check(name, value)


@dataclass(frozen=True)
class NoneOnly(Constraint):
    """Only None: an inherited option that this class takes no value for, and why.

    Example:
        >>> NoneOnly("TS samples on the latent scale").check("mean_scale", "latent")
        Traceback (most recent call last):
        ...
        ValueError: mean_scale must be None here (TS samples on the latent scale); got 'latent'.
    """

    why: str

    def check(self, name: str, value: Any) -> None:
        """None, or a ``ValueError``."""
        if value is not None:
            raise ValueError(f"{name} must be None here ({self.why}); got {value!r}.")


@dataclass(frozen=True)
class AsGiven(Constraint):
    """What ``inner`` accepts, stored as given (an int stays an int where a float is valid).

    Example:
        >>> AsGiven(Real(low=0.0)).check("lr", 1)
        1
    """

    inner: Constraint

    def check(self, name: str, value: Any) -> Any:
        """The value unchanged, once ``inner`` accepted it."""
        self.inner.check(name, value)
        return value


@dataclass(frozen=True)
class Free(Constraint):
    """Any value, stored as given (the class's ``_resolve`` checks it in context)."""

    def check(self, name: str, value: Any) -> Any:
        """The value unchanged."""
        return value


@dataclass(frozen=True)
class Check(Constraint):
    """A check written as a function ``function(name, value) -> stored value``."""

    function: Callable[[str, Any], Any]

    def check(self, name: str, value: Any) -> Any:
        """What the function returns."""
        return self.function(name, value)


#: ``Param.before`` of a parameter whose default never changed.
_NO_BEFORE = object()


@dataclass(frozen=True)
class Param:
    """One declared hyper-parameter: its check and its default (see :func:`param`)."""

    check: Constraint
    default: Any
    #: Left out of ``get_params`` at its default (:func:`param`).
    quiet: bool = False
    #: The value of an earlier version's default, which stored parameter sets without
    #: this parameter mean (:func:`param`, :func:`stored_params`).
    before: Any = _NO_BEFORE


@dataclass(frozen=True)
class _Fixed:
    value: Any


@dataclass(frozen=True)
class _Learned:
    default: Any


_UNSET = object()


def param(
    check: Constraint, *, default: Any, quiet: bool = False, before: Any = _NO_BEFORE
) -> Any:
    """Declare a hyper-parameter with its check and default (one line per parameter).

    The default goes through the check too (``Real`` stores 1 as 1.0); a default of None
    under ``Maybe`` is the usual "resolved by the class" (a mode's own value).
    ``quiet=True`` leaves the parameter out of ``get_params`` while it is at its default:
    an option added after runs were stored, whose default computes what they computed,
    so that their run ids stay (``Policy.get_params``).

    ``before``: for a parameter whose default changed, the default of the earlier
    version (which may have left it out of ``get_params``, being ``quiet``). Such a
    parameter is always in ``get_params`` (so the two values never share a run id), and
    a stored parameter set without it (a state file, a run stored before the change)
    means ``before`` (:func:`stored_params`): old states load as they were saved, and
    old runs keep their ids and their numbers.

    Raises:
        ValueError: For ``quiet=True`` with ``before`` (a quiet parameter's absence
            means its default).
    """
    if quiet and before is not _NO_BEFORE:
        raise ValueError(
            "a parameter with an earlier default (before=) cannot be quiet: its "
            "absence from a stored parameter set means the earlier value."
        )
    return Param(check, default, quiet, before)


def learned(*, default: Any = _UNSET, init: Literal[False] = False) -> Any:
    """Declare a typed attribute of the learned state, which is not a parameter.

    For the type checker's sake: an annotated class attribute of a declared class is a
    constructor keyword unless it says otherwise. ``default`` is its value on the class
    (none: the attribute does not exist before the policy sets it).
    """
    return _Learned(default)


def fixed(value: Any) -> Any:
    """Pin an inherited hyper-parameter to ``value`` and take it out of the constructor."""
    return _Fixed(value)


def takes_declared(init: _Init) -> _Init:
    """Mark ``init`` as the constructor that takes a class's declared parameters."""
    init.takes_declared = True  # type: ignore[attr-defined]
    return init


def declared(cls: type) -> tuple[dict[str, Param], dict[str, Any]]:
    """The hyper-parameters of ``cls`` in constructor order and its pins.

    The order is a subclass's new parameters before those it inherits (as a constructor
    that forwards its parent's keywords lists them), a re-declared one in its inherited
    place, and ``seed`` last.
    """
    params: dict[str, Param] = {}
    pins: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        new: dict[str, Param] = {}
        for name, value in vars(klass).items():
            if isinstance(value, Param):
                if name in params:
                    params[name] = value
                else:
                    new[name] = value
                pins.pop(name, None)
            elif isinstance(value, _Fixed):
                params.pop(name, None)
                pins[name] = value.value
        params = {**new, **params}
    if "seed" in params:
        params["seed"] = params.pop("seed")
    return params, pins


@dataclass_transform(kw_only_default=True, field_specifiers=(param, learned))
class DeclaredMeta(ABCMeta):
    """Metaclass of classes whose hyper-parameters are declared with :func:`param`.

    For each class it records the declarations (:func:`declared`) and states the
    constructor's signature (``inspect.signature`` and ``help`` read it): the
    declarations when the constructor is the one marked :func:`takes_declared`, else the
    signature of the ``__init__`` written by hand.
    """

    #: (parameters, pins) of the class, from :func:`declared`.
    _declaration: tuple[dict[str, Param], dict[str, Any]]

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        namespace: dict[str, Any],
        **kwargs: Any,
    ) -> None:
        super().__init__(name, bases, namespace, **kwargs)
        for attribute, value in namespace.items():
            if isinstance(value, _Learned):  # a class default, or nothing
                if value.default is _UNSET:
                    delattr(cls, attribute)
                else:
                    setattr(cls, attribute, value.default)
        cls._declare()

    def _declare(cls) -> None:
        """Record the declarations and state the constructor's signature."""
        params, pins = declared(cls)
        cls._declaration = (params, pins)
        init = vars(cls).get("__init__") or next(
            vars(k)["__init__"] for k in cls.__mro__ if "__init__" in vars(k)
        )
        if getattr(init, "takes_declared", False):
            own = [
                inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=p.default)
                for n, p in params.items()
            ]
        else:  # written by hand
            own = list(inspect.signature(init).parameters.values())[1:]
        setattr(cls, "__signature__", inspect.Signature(own))  # noqa: B010


def pin(**values: Any) -> Callable[[_Class], _Class]:
    """Class decorator: ``name = fixed(value)`` for each of ``values``.

    For a set of pins that several variants share, stated once.

    Example:
        >>> from banditkit.policies import LinUCB
        >>> Greedy = pin(nu=0.0)(type("Greedy", (LinUCB,), {}))
        >>> Greedy().get_params()
        {'lam': 1.0, 'seed': 0}
    """

    def apply(cls: _Class) -> _Class:
        for name, value in values.items():
            setattr(cls, name, _Fixed(value))
        cast(DeclaredMeta, cls)._declare()
        return cls

    return apply


def quiet_defaults(cls: type) -> dict[str, Any]:
    """The ``quiet`` parameters of ``cls`` and their checked defaults (:func:`param`).

    Example:
        >>> from banditkit.policies import NeuralUCB
        >>> quiet_defaults(NeuralUCB)
        {'device': 'cpu'}
    """
    params: dict[str, Param] = getattr(cls, "_declaration", ({}, {}))[0]
    return {
        name: p.check.check(name, p.default) for name, p in params.items() if p.quiet
    }


def stored_params(cls: object, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as saved by an earlier version, with the earlier defaults it implies.

    A parameter declared with ``before`` (:func:`param`) that ``params`` lacks was, when
    they were saved, at that earlier default; every other entry is returned as given.

    Example:
        >>> from banditkit.policies.dueling import NVLDBUCB
        >>> stored_params(NVLDBUCB, {"a": 1.0})["dtype"]
        'float64'
        >>> stored_params(NVLDBUCB, {"dtype": "float32"})["dtype"]
        'float32'
    """
    declarations: dict[str, Param] = getattr(cls, "_declaration", ({}, {}))[0]
    earlier = {
        name: p.before
        for name, p in declarations.items()
        if p.before is not _NO_BEFORE and name not in params
    }
    return {**params, **earlier}


def set_params(obj: Any, given: dict[str, Any]) -> None:
    """Check each declared parameter of ``obj``'s class (``given``, else its default) and store it.

    Raises:
        TypeError: For a keyword that is not a parameter of the class.
    """
    params, pins = type(obj)._declaration
    for name in given:
        if name not in params:
            raise TypeError(
                f"{type(obj).__name__}() got an unexpected keyword argument {name!r}."
            )
    for name, p in params.items():
        setattr(obj, name, p.check.check(name, given.get(name, p.default)))
    for name, value in pins.items():
        setattr(obj, name, value)
