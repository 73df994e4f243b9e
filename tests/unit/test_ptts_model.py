"""Model file loading: exact ticks, every kind of profile, and one-line errors naming component and field."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from jitterscope.ptts.model import ModelError, load_model, model_from_dict


def _m(components, resolution="1ms", **top):
    return model_from_dict({"resolution": resolution, "components": components, **top})


GOOD = {"name": "a", "period": "10ms", "offset": "0ms", "etp": {"pmf": {"1ms": 1.0}}}


def test_times_are_exact_ticks():
    m = _m(
        [
            {"name": "s", "period": "66.66ms", "offset": "0.01ms", "etp": {"uniform": ["1ms", "1.02ms"]}},
            {"name": "g", "period": "16.67ms", "etp": {"pmf": {"11ms": 0.9, "12ms": 0.1}}},
        ],
        resolution="0.01ms",
    )
    assert [c.period for c in m.components] == [6666, 1667]
    assert m.components[0].offset == 1
    assert m.components[0].etp.support.tolist() == [100, 101, 102]
    assert m.components[0].etp.prob.tolist() == pytest.approx([1 / 3] * 3)
    assert m.unit == "ms"
    assert m.ticks_to_unit(6666) == 66.66
    assert m.trees() == 1667  # lcm(6666, 1667) / 6666


def test_display_unit_can_be_chosen():
    m = _m([{"name": "a", "period": "16.6ms", "etp": {"pmf": {"11ms": 1.0}}}], resolution="10us", unit="ms")
    assert m.unit == "ms" and m.ticks_to_unit(1660) == 16.6
    assert m.parse_time(5, "x") == 500  # bare numbers are in the display unit
    assert "field unit" in _err(unit="parsec")


def test_uniform_is_inclusive_with_equal_mass_per_tick():
    m = _m([{"name": "a", "period": "200ms", "etp": {"uniform": ["50ms", "149ms"]}}])
    e = m.components[0].etp
    assert (e.lo, e.hi, len(e.support)) == (50, 149, 100)
    assert np.allclose(e.prob, 0.01)


def test_csv_profile_with_header_units_and_normalize(tmp_path):
    (tmp_path / "f.csv").write_text("# measured\ntime,count\n11,90\n12,10\n")
    (tmp_path / "m.yaml").write_text(
        textwrap.dedent("""\
        resolution: 0.1ms
        components:
          - {name: gpu, period: 16.6ms, etp: {csv: f.csv, unit: ms, normalize: true}}
          - {name: wall, period: 16.7ms, etp: {csv: g.csv}}
        """)
    )
    (tmp_path / "g.csv").write_text("8ms,1.0\n")
    m = load_model(tmp_path / "m.yaml")
    assert m.components[0].etp.support.tolist() == [110, 120]
    assert m.components[0].etp.prob.tolist() == pytest.approx([0.9, 0.1])
    assert m.components[1].etp.support.tolist() == [80]


def _err(components=None, resolution="1ms", **top) -> str:
    with pytest.raises(ModelError) as ei:
        _m(components if components is not None else [GOOD], resolution=resolution, **top)
    msg = str(ei.value)
    assert "\n" not in msg
    assert ei.value.exit_code == 2
    return msg


def test_period_not_representable_at_the_resolution():
    msg = _err([{**GOOD, "name": "gpu", "period": "16.66ms"}], resolution="0.1ms")
    assert "'gpu'" in msg and "period" in msg and "resolution" in msg


def test_offset_and_profile_times_not_representable():
    assert "offset" in _err([{**GOOD, "name": "x", "offset": "0.5ms"}])
    msg = _err([{**GOOD, "name": "x", "etp": {"pmf": {"1.5ms": 1.0}}}])
    assert "'x'" in msg and "etp.pmf" in msg


def test_probabilities_must_sum_to_one():
    msg = _err([{**GOOD, "name": "cam", "etp": {"pmf": {"1ms": 0.5, "2ms": 0.4}}}])
    assert "'cam'" in msg and "etp.pmf" in msg and "sum to 0.9" in msg


def test_negative_and_empty_profiles():
    assert "negative" in _err([{**GOOD, "etp": {"pmf": {"-1ms": 1.0}}}])
    assert "must be a finite number >= 0" in _err([{**GOOD, "etp": {"pmf": {"1ms": -0.5, "2ms": 1.5}}}])
    assert "empty profile" in _err([{**GOOD, "etp": {"pmf": {}}}])
    assert "empty profile" in _err([{**GOOD, "etp": {"uniform": ["5ms", "4ms"]}}])
    assert "empty profile" in _err([{**GOOD, "etp": {"pmf": {"1ms": 0.0}}}])
    assert "negative" in _err([{**GOOD, "etp": {"uniform": ["-1ms", "4ms"]}}])


def test_unknown_keys_everywhere():
    assert "unknown key 'speed'" in _err(speed=3)
    msg = _err([{**GOOD, "name": "gpu", "perod": "5ms"}])
    assert "'gpu'" in msg and "unknown key 'perod'" in msg
    msg = _err([{**GOOD, "name": "gpu", "etp": {"pmf": {"1ms": 1.0}, "scale": 2}}])
    assert "'gpu'" in msg and "etp" in msg and "unknown key 'scale'" in msg
    msg = _err([{**GOOD, "name": "gpu", "etp": {"gauss": [1, 2]}}])
    assert "unknown key 'gauss'" in msg


def test_missing_and_malformed_fields():
    assert "period is missing" in _err([{"name": "a", "etp": {"pmf": {"1ms": 1.0}}}])
    assert "unit" in _err([{**GOOD, "period": 10}])
    assert "malformed time" in _err([{**GOOD, "period": "ten ms"}])
    assert "duplicate" in _err([GOOD, GOOD])
    assert "non-empty list" in _err([])
    assert "must be positive" in _err([{**GOOD, "period": "0ms"}])
    assert "resolution is missing" in str(pytest.raises(ModelError, model_from_dict, {"components": [GOOD]}).value)


def test_hyperperiod_beyond_what_fits():
    primes = [1000003, 1000033, 1000037, 1000039, 1000081]
    comps = [{"name": f"c{i}", "period": f"{p}ns", "etp": {"pmf": {"1ns": 1.0}}} for i, p in enumerate(primes)]
    msg = _err(comps, resolution="1ns")
    assert "'c3'" in msg and "period" in msg and "hyper-period" in msg


def test_bad_yaml_and_missing_file(tmp_path):
    (tmp_path / "bad.yaml").write_text("components: [\n")
    with pytest.raises(ModelError, match="not valid YAML"):
        load_model(tmp_path / "bad.yaml")
    with pytest.raises(ModelError, match="no such model file"):
        load_model(tmp_path / "none.yaml")
    with pytest.raises(ModelError, match="no such profile file"):
        _m([{**GOOD, "etp": {"csv": str(tmp_path / "missing.csv")}}])
