"""The figure cache: the same figure data is drawn once, any change draws it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from kernbench.render import cache
from kernbench.render.style import save_figure

DRAWN: list[str] = []


def draw(data: dict) -> Figure:
    DRAWN.append(data["title"])
    figure = Figure(figsize=(2, 1))
    figure.suptitle(data["title"])
    return figure


@pytest.fixture(autouse=True)
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    DRAWN.clear()


def test_the_same_data_is_drawn_once_and_copied_after(tmp_path: Path) -> None:
    first = save_figure({"title": "a"}, draw, tmp_path / "one", "fig")
    second = save_figure({"title": "a"}, draw, tmp_path / "two", "fig")
    assert DRAWN == ["a"]
    assert first.read_bytes() == second.read_bytes()
    assert (tmp_path / "two" / "fig.json").is_file()  # the data is written either way


def test_other_data_is_drawn_again(tmp_path: Path) -> None:
    save_figure({"title": "a"}, draw, tmp_path / "one", "fig")
    save_figure({"title": "b"}, draw, tmp_path / "two", "fig")
    assert DRAWN == ["a", "b"]


def test_off_means_always_drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    save_figure({"title": "a"}, draw, tmp_path / "one", "fig")
    save_figure({"title": "a"}, draw, tmp_path / "two", "fig")
    assert DRAWN == ["a", "a"]


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    assert save_figure({"title": "a"}, draw, tmp_path / "one", "fig").is_file()


@pytest.mark.parametrize("module", ["style.py", "series_look.py", "measured_on.py"])
def test_a_change_to_any_module_a_drawing_uses_draws_anew(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The generic figures' looks come from series_look, the A/B figure's footnote from
    # measured_on: a key of the drawing module and style alone kept stale PNGs.
    from kernbench.render import generic_draw

    before = cache.figure_key({"title": "a"}, generic_draw.draw)
    digest = cache._source_digest
    monkeypatch.setattr(cache, "_source_digest",
                        lambda path: b"edited" if path.endswith(module) else digest(path))
    assert cache.figure_key({"title": "a"}, generic_draw.draw) != before


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError(28, "No space left on device")])
def test_a_copy_into_the_cache_stopped_midway_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: BaseException
) -> None:
    """A Ctrl-C (or a full disk) as the drawn PNG was copied into the cache left
    `.KEY.XXXXXXXX` there for good."""
    def copy_cut(source: Path, target: Path) -> None:
        Path(target).write_bytes(b"\x89PNG cut")
        raise stop

    monkeypatch.setattr(cache.shutil, "copyfile", copy_cut)
    if isinstance(stop, OSError):
        save_figure({"title": "a"}, draw, tmp_path / "one", "fig")  # the cache is skipped
    else:
        with pytest.raises(KeyboardInterrupt):
            save_figure({"title": "a"}, draw, tmp_path / "one", "fig")
    assert list((tmp_path / "cache").iterdir()) == []
