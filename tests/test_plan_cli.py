"""`tolk plan`: CSV in, CSV out, exit codes, validation and the SVG picture."""

from __future__ import annotations

import csv
import io
import random
import re
import xml.etree.ElementTree as ET

import pytest

from tolk.cli import main
from tolk.plan_cli import EXIT_INVALID, EXIT_MALFORMED, EXIT_OK
from tolk.schedule.planner import find_overlaps, floor_bytes
from tolk.schedule.planviz import plan_svg

SVG = "{http://www.w3.org/2000/svg}"


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def random_lifetimes_csv(n: int = 200, seed: int = 0) -> str:
    rng = random.Random(seed)
    rows = ["id,lower,upper,size"]
    for i in range(n):
        lower = rng.randrange(100)
        rows.append(f"buf{i},{lower},{lower + 1 + rng.randrange(12)},{rng.randrange(0, 5000)}")
    return "\n".join(rows) + "\n"


def parse_plan(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def summary(err: str) -> dict[str, str]:
    """The key=value pairs of the stderr summary line."""
    return dict(re.findall(r"([\w/]+)=(\S+)", err))


def test_plan_writes_every_buffer_in_input_order_with_a_valid_offset(tmp_path, capsys):
    src = random_lifetimes_csv()
    assert main(["plan", write(tmp_path, "in.csv", src)]) == EXIT_OK
    out, err = capsys.readouterr()
    rows, given = parse_plan(out), parse_plan(src)
    assert list(rows[0]) == ["id", "lower", "upper", "size", "offset"]
    assert [(r["id"], r["lower"], r["upper"], r["size"]) for r in rows] == [
        (r["id"], r["lower"], r["upper"], r["size"]) for r in given
    ]
    sizes = [int(r["size"]) for r in rows]
    lowers = [int(r["lower"]) for r in rows]
    lasts = [int(r["upper"]) - 1 for r in rows]
    offsets = [int(r["offset"]) for r in rows]
    assert find_overlaps(sizes, lowers, lasts, offsets) == []
    stats = summary(err)
    assert int(stats["buffers"]) == len(rows)
    assert int(stats["floor"]) == floor_bytes(sizes, lowers, lasts)
    assert int(stats["arena"]) == max(o + s for o, s in zip(offsets, sizes))
    assert float(stats["arena/floor"]) >= 1.0
    assert float(stats["time"].rstrip("s")) >= 0.0


def test_out_file_round_trips_through_validate(tmp_path, capsys):
    src = write(tmp_path, "in.csv", random_lifetimes_csv(seed=1))
    out = str(tmp_path / "plan.csv")
    assert main(["plan", src, "--out", out, "--alignment", "64"]) == EXIT_OK
    assert capsys.readouterr().out == ""
    assert main(["plan", src, "--validate", out, "--alignment", "64"]) == EXIT_OK
    assert main(["plan", out, "--validate", out, "--alignment", "64"]) == EXIT_OK


def test_alignment_rounds_sizes_up_and_aligns_offsets(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na,0,2,1\nb,1,3,1\nc,2,4,300\n")
    assert main(["plan", src, "--alignment", "256"]) == EXIT_OK
    out, err = capsys.readouterr()
    offsets = [int(r["offset"]) for r in parse_plan(out)]
    assert all(o % 256 == 0 for o in offsets)
    assert int(summary(err)["arena"]) == 256 * 3 == int(summary(err)["floor"])


def test_columns_are_found_by_name_and_extra_columns_are_ignored(tmp_path, capsys):
    src = "size,id,offset,upper,lower,note\n10,x,999,5,0,hi\n20,y,999,9,3,\n"
    assert main(["plan", write(tmp_path, "in.csv", src)]) == EXIT_OK
    rows = parse_plan(capsys.readouterr().out)
    assert [(r["id"], r["lower"], r["upper"], r["size"]) for r in rows] == [
        ("x", "0", "5", "10"),
        ("y", "3", "9", "20"),
    ]
    assert max(int(r["offset"]) + int(r["size"]) for r in rows) == 30  # input offsets ignored


def test_zero_size_buffers_and_blank_lines_are_accepted(tmp_path, capsys):
    src = "id,lower,upper,size\n\na,0,3,0\nb,0,3,8\n\n"
    assert main(["plan", write(tmp_path, "in.csv", src)]) == EXIT_OK
    assert [r["offset"] for r in parse_plan(capsys.readouterr().out)] == ["0", "0"]


@pytest.mark.parametrize(
    "text, line",
    [
        ("", 1),
        ("a,0,3,8\nb,1,4,8\n", 1),
        ("id,lower,upper\na,0,3\n", 1),
        ("id,lower,upper,size\na,0,3,8\nb,x,4,8\n", 3),
        ("id,lower,upper,size\na,0,3.5,8\n", 2),
        ("id,lower,upper,size\na,0,3,1e3\n", 2),
        ("id,lower,upper,size\na,3,3,8\n", 2),
        ("id,lower,upper,size\na,4,3,8\n", 2),
        ("id,lower,upper,size\na,0,3,-8\n", 2),
        ("id,lower,upper,size\na,0,3,8\nb,0,3,8\na,1,2,8\n", 4),
        ("id,lower,upper,size\na,0,3,8,9\n", 2),
        ("id,lower,upper,size\n,0,3,8\n", 2),
        ("id,lower,upper,size,size\na,0,3,8,9\n", 1),
        ("id,id,lower,upper,size\na,b,0,3,8\n", 1),
        ("id,lower,upper,size\na,0,3," + "9" * 5000 + "\n", 2),
        ("id,lower,upper,size\na,0,1" + "0" * 400 + ",8\n", 2),
        ("id,lower,upper,size\na,0,3,9223372036854775808\n", 2),
    ],
    ids=[
        "empty file",
        "missing header",
        "missing size column",
        "non-integer lower",
        "non-integer upper",
        "exponent size",
        "upper equals lower",
        "upper below lower",
        "negative size",
        "duplicate id",
        "extra field",
        "empty id",
        "duplicate column",
        "duplicate id column",
        "a 5000-digit size",
        "a 401-digit upper",
        "size 2**63",
    ],
)
def test_malformed_input_is_a_one_line_error_naming_the_line(tmp_path, capsys, text, line):
    path = write(tmp_path, "bad.csv", text)
    assert main(["plan", path]) == EXIT_MALFORMED
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert f"{path}:{line}:" in err


def test_a_missing_file_is_malformed_input(tmp_path, capsys):
    assert main(["plan", str(tmp_path / "nope.csv")]) == EXIT_MALFORMED
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_capacity_below_the_arena_fails_with_exit_code_1(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na,0,3,100\nb,1,4,100\n")
    out = tmp_path / "plan.csv"
    assert main(["plan", src, "--capacity", "199", "--out", str(out)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "199" in err and "capacity" in err
    assert not out.exists()
    assert main(["plan", src, "--capacity", "200"]) == EXIT_OK


def test_validate_names_overlapping_buffers_by_id(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\nact,0,3,100\nw,2,6,100\ntmp,5,7,50\n")
    bad = write(
        tmp_path,
        "bad.csv",
        "id,lower,upper,size,offset\nact,0,3,100,0\nw,2,6,100,60\ntmp,5,7,50,200\n",
    )
    assert main(["plan", src, "--validate", bad]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "'act'" in err and "'w'" in err and "'tmp'" not in err


@pytest.mark.parametrize(
    "solution",
    [
        "id,lower,upper,size,offset\na,0,3,100,0\n",
        "id,lower,upper,size,offset\na,0,3,100,0\nb,1,4,100,100\nc,0,1,5,300\n",
        "id,lower,upper,size,offset\na,0,3,100,0\nb,1,5,100,100\n",
        "id,lower,upper,size,offset\na,0,3,100,0\nb,1,4,100,50\n",
    ],
    ids=["missing buffer", "extra buffer", "changed lifetime", "overlap"],
)
def test_validate_rejects_solutions_that_do_not_fit_the_problem(tmp_path, capsys, solution):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na,0,3,100\nb,1,4,100\n")
    assert main(["plan", src, "--validate", write(tmp_path, "s.csv", solution)]) == EXIT_INVALID


def test_validate_checks_alignment_and_capacity(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na,0,3,100\nb,1,4,100\n")
    sol = write(tmp_path, "s.csv", "id,lower,upper,size,offset\na,0,3,100,0\nb,1,4,100,100\n")
    assert main(["plan", src, "--validate", sol]) == EXIT_OK
    assert main(["plan", src, "--validate", sol, "--alignment", "64"]) == EXIT_INVALID
    assert main(["plan", src, "--validate", sol, "--capacity", "150"]) == EXIT_INVALID


def test_validate_counts_no_bytes_for_a_buffer_of_size_0(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na,0,2,0\nb,1,3,20\n")
    sol = write(tmp_path, "s.csv", "id,lower,upper,size,offset\na,0,2,0,1000001\nb,1,3,20,0\n")
    assert main(["plan", src, "--validate", sol, "--capacity", "100"]) == EXIT_OK
    assert "arena=20 " in capsys.readouterr().err


def test_svg_of_ids_with_characters_xml_cannot_hold_is_well_formed(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na\x01b,0,2,10\nc\x1f<&,1,3,10\n")
    svg = tmp_path / "p.svg"
    assert main(["plan", src, "--svg", str(svg)]) == EXIT_OK
    text = ET.parse(svg).getroot().itertext()
    assert any("a\ufffdb" in t for t in text)


def test_a_solution_without_offsets_is_malformed(tmp_path, capsys):
    src = write(tmp_path, "in.csv", "id,lower,upper,size\na,0,3,100\n")
    assert main(["plan", src, "--validate", src]) == EXIT_MALFORMED
    sol = write(tmp_path, "s.csv", "id,lower,upper,size,offset\na,0,3,100,-5\n")
    assert main(["plan", src, "--validate", sol]) == EXIT_MALFORMED


def test_svg_option_draws_one_rectangle_per_buffer_with_floor_and_arena(tmp_path, capsys):
    src = write(tmp_path, "in.csv", random_lifetimes_csv(n=50, seed=2))
    picture = tmp_path / "plan.svg"
    assert main(["plan", src, "--svg", str(picture)]) == EXIT_OK
    root = ET.fromstring(picture.read_text())
    titled = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    nonzero = [r for r in parse_plan(capsys.readouterr().out) if int(r["size"]) > 0]
    assert len(titled) == len(nonzero)
    assert {r.find(f"{SVG}title").text.split(":")[0] for r in titled} == {r["id"] for r in nonzero}
    classes = {p.get("class") for p in root.iter(f"{SVG}path")}
    assert {"floor", "arena"} <= classes


def test_plan_svg_is_self_contained_with_integer_coordinates_and_no_inline_rect_styles():
    rng = random.Random(5)
    n = 10_000
    sizes = [rng.randrange(1, 1 << 16) for _ in range(n)]
    firsts = [rng.randrange(5000) for _ in range(n)]
    lasts = [f + rng.randrange(30) for f in firsts]
    offsets = [rng.randrange(1 << 20) for _ in range(n)]  # a picture need not be a valid plan
    arena = max(o + s for o, s in zip(offsets, sizes))
    svg = plan_svg(sizes, firsts, lasts, offsets, arena, labels=[f"b{i}" for i in range(n)])
    root = ET.fromstring(svg)
    rects = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(rects) == n
    for r in rects:
        assert all(r.get(k).isdigit() for k in ("x", "y", "width", "height"))
        assert r.get("style") is None and r.get("fill") is None
    assert "href" not in svg and "<script" not in svg
    assert len(svg) < 150 * n


def test_plan_svg_escapes_labels_and_skips_zero_size_buffers():
    svg = plan_svg([8, 0, 4], [0, 1, 2], [3, 1, 4], [0, 0, 8], 12, labels=["<a&b>", "z", '"q"'])
    titles = [t.text for t in ET.fromstring(svg).iter(f"{SVG}title")]
    assert any(t.startswith("<a&b>:") for t in titles)
    assert any(t.startswith('"q":') for t in titles)
    assert not any(t.startswith("z:") for t in titles)


def test_no_command_prints_help_and_succeeds(capsys):
    assert main([]) == EXIT_OK
    assert "plan" in capsys.readouterr().out


def test_plan_reads_a_csv_with_a_byte_order_mark_and_fails_cleanly_on_an_unwritable_output(
        tmp_path, capsys):
    src = write(tmp_path, "in.csv", "\ufeffid,lower,upper,size\na,0,2,100\nb,1,3,50\n")
    assert main(["plan", src]) == EXIT_OK
    assert "b,1,3,50,100" in capsys.readouterr().out
    for flag in ("--out", "--svg"):
        assert main(["plan", src, flag, str(tmp_path / "missing" / "x")]) == EXIT_MALFORMED
        assert "cannot write" in capsys.readouterr().err


def test_bad_alignment_capacity_and_svg_path_are_named(tmp_path, capsys):
    f = write(tmp_path, "l.csv", "id,lower,upper,size\na,0,2,10\n")
    assert main(["plan", f, "--alignment", str(10**23)]) == EXIT_MALFORMED
    assert "--alignment" in capsys.readouterr().err
    assert main(["plan", f, "--capacity", "-1"]) == EXIT_MALFORMED
    assert "--capacity" in capsys.readouterr().err
    assert main(["plan", f, "--svg", str(tmp_path), "--out", str(tmp_path / "o.csv")]) \
        == EXIT_MALFORMED
    assert "cannot write the picture" in capsys.readouterr().err
