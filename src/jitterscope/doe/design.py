"""Two-level factorial designs: full 2^k and fractional 2^(k-p).

Notation and method follow Jain, *The Art of Computer Systems Performance
Analysis* (1991), ch. 17 (2^k designs, sign table), ch. 18 (2^k r designs) and
ch. 19 (2^(k-p) fractional designs, generators, confounding, resolution), and
Montgomery, *Design and Analysis of Experiments*, for Yates' standard order.

Factors are letters A, B, C, ... in plan order.  A treatment is labelled by the
lower-case letters of the factors at their high level, "(1)" when none is.  In a
fractional design the first k-p factors are the base factors, written in Yates
order, and each remaining factor is a product of base columns given by its
generator (e.g. D = ABC).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np

from jitterscope.doe.results import DesignInfo
from jitterscope.errors import JitterscopeError

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def word_product(a: str, b: str) -> str:
    """Product of two effect words: squared letters cancel (A·A = I).  "" is I."""
    s = set(a) ^ set(b)
    return "".join(sorted(s))


@dataclass
class Generator:
    factor: str  # the generated factor's letter
    word: str  # product of base letters
    sign: int = 1

    def __str__(self) -> str:
        return f"{self.factor}={'-' if self.sign < 0 else ''}{self.word}"


_GEN_RE = re.compile(r"^\s*([A-Z])\s*=\s*([+-]?)\s*([A-Z]+)\s*$")


def parse_generator(text: str, k: int, p: int) -> Generator:
    m = _GEN_RE.match(str(text))
    if not m:
        raise JitterscopeError(f"malformed generator {text!r}: write it like D=ABC (factor letters)")
    f, sign, word = m.group(1), m.group(2), m.group(3)
    base = LETTERS[: k - p]
    if f not in LETTERS[k - p : k]:
        raise JitterscopeError(
            f"generator {text!r}: the generated factor must be one of "
            f"{', '.join(LETTERS[k - p : k])} (the last {p} factors)"
        )
    if len(set(word)) != len(word) or any(c not in base for c in word):
        raise JitterscopeError(
            f"generator {text!r}: the product may use only base factors {', '.join(base)}, each once"
        )
    if len(word) < 2:
        raise JitterscopeError(f"generator {text!r} confounds {f} with a main effect: use an interaction")
    return Generator(f, "".join(sorted(word)), -1 if sign == "-" else 1)


@dataclass
class Design:
    """A two-level design: k factors, p generators, n = 2^(k-p) treatments."""

    k: int
    generators: list[Generator] = field(default_factory=list)

    @property
    def p(self) -> int:
        return len(self.generators)

    @property
    def letters(self) -> str:
        return LETTERS[: self.k]

    @property
    def base(self) -> str:
        return LETTERS[: self.k - self.p]

    @property
    def n(self) -> int:
        return 2 ** (self.k - self.p)

    @property
    def kind(self) -> str:
        return "full" if self.p == 0 else "fractional"

    def levels(self) -> np.ndarray:
        """n x k matrix of -1/+1: row i is treatment i in Yates order."""
        nb = self.k - self.p
        m = np.empty((self.n, self.k), dtype=int)
        for i in range(self.n):
            for j in range(nb):
                m[i, j] = 1 if (i >> j) & 1 else -1
        for g in self.generators:
            col = np.full(self.n, g.sign)
            for c in g.word:
                col = col * m[:, LETTERS.index(c)]
            m[:, LETTERS.index(g.factor)] = col
        return m

    def labels(self) -> list[str]:
        """Treatment labels: letters of the factors at + ("(1)" for none)."""
        out = []
        for row in self.levels():
            s = "".join(LETTERS[j].lower() for j, v in enumerate(row) if v > 0)
            out.append(s or "(1)")
        return out

    def effects(self) -> list[str]:
        """Estimable effects (sign-table columns but I), named by base letters, Yates order."""
        nb = self.k - self.p
        names = []
        for i in range(1, self.n):
            names.append("".join(LETTERS[j] for j in range(nb) if (i >> j) & 1))
        return names

    def sign_table(self) -> np.ndarray:
        """n x n matrix: column 0 is I, column c is the product of the base columns in effects()[c-1]."""
        lv = self.levels()
        cols = [np.ones(self.n, dtype=int)]
        for e in self.effects():
            col = np.ones(self.n, dtype=int)
            for c in e:
                col = col * lv[:, LETTERS.index(c)]
            cols.append(col)
        return np.column_stack(cols)

    def defining_relation(self) -> list[tuple[int, str]]:
        """The defining contrast subgroup without I: (sign, word) pairs, e.g. I = ABCD."""
        words: list[tuple[int, str]] = []
        gens = [(g.sign, word_product(g.factor, g.word)) for g in self.generators]
        for r in range(1, len(gens) + 1):
            for combo in itertools.combinations(gens, r):
                sign, w = 1, ""
                for s, gw in combo:
                    sign *= s
                    w = word_product(w, gw)
                words.append((sign, w))
        return words

    def resolution(self) -> int | None:
        """Length of the shortest word in the defining relation (None for a full design)."""
        rel = self.defining_relation()
        return min(len(w) for _, w in rel) if rel else None

    def aliases(self, effect: str) -> list[str]:
        """Every effect confounded with `effect` (signed, e.g. '-BCD')."""
        out = []
        for sign, w in self.defining_relation():
            a = word_product(effect, w)
            out.append(("-" if sign < 0 else "") + (a or "I"))
        return out

    def alias_name(self, effect: str) -> str:
        """`effect` with its aliases, e.g. 'A+BCD'; the name used in tables."""
        al = self.aliases(effect)
        return effect + "".join(a if a.startswith("-") else "+" + a for a in al)

    def describe(self) -> DesignInfo:
        rel = self.defining_relation()
        return {
            "kind": self.kind,
            "k": self.k,
            "p": self.p,
            "treatments": self.n,
            "generators": [str(g) for g in self.generators],
            "defining_relation": "I=" + "=".join(("-" if s < 0 else "") + w for s, w in rel) if rel else None,
            "resolution": self.resolution(),
            "aliases": {e: self.aliases(e) for e in self.effects()} if rel else {},
        }


def roman(n: int | None) -> str:
    return {None: "-", 2: "II", 3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}.get(n, str(n))


def run_order(n_treatments: int, replications: int, seed: int) -> list[tuple[int, int]]:
    """Completely randomized order of all (treatment, replication) runs.

    Randomizing over every run, not within blocks, keeps drift (temperature, other
    tenants, time of day) from aligning with any factor (Montgomery, ch. 1).
    """
    runs = [(t, r) for r in range(replications) for t in range(n_treatments)]
    perm = np.random.default_rng(seed).permutation(len(runs))
    return [runs[i] for i in perm]
