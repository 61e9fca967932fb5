"""The figures' shared style (benchmarks/_plots.py): a crowded figure picks out vfm and the best few."""

from __future__ import annotations

from benchmarks import _plots


def test_a_crowded_figure_colours_vfm_and_the_best_three_and_greys_the_rest():
    names = ["vfm", "a", "b", "c", "d", "e", "artifact:vfm", "artifact:a", "artifact:b"]
    worst = {"vfm": 9.0, "a": 5.0, "b": 1.0, "c": 2.0, "d": 7.0, "e": 3.0, "artifact:vfm": 8.0, "artifact:a": 6.0,
             "artifact:b": 4.0}
    look, picked = _plots.highlighted(names, worst.__getitem__)
    assert picked == ["vfm", "b", "c", "e", "artifact:vfm"]  # vfm's runs whatever their score, then the best three
    grey = [name for name in names if look[name]["color"] == _plots.OTHER_COLOUR]
    assert grey == ["a", "d", "artifact:a", "artifact:b"]
    colours = [look[name]["color"] for name in picked if not _plots.is_vfm(name)]
    assert len(set(colours)) == 3 and _plots.OTHER_COLOUR not in colours
    assert all(look[name]["color"] == _plots.styles(names)[name]["color"] for name in picked)  # same colour everywhere
