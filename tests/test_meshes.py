"""Meshes MuJoCo cannot read, converted and cached; package:// URIs; MJCF descriptions."""

import struct
import sys

import mujoco
import numpy as np
import pytest

import wbsim
from wbsim.errors import RobotLoadError
from wbsim.meshes import convert_urdf_meshes, mujoco_mesh, needs_conversion, resolve_package_uris

# a tetrahedron: 4 vertices, 4 faces (outward)
TET_V = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
TET_F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])


def _ascii_stl(v, f) -> str:
    out = ["solid tet"]
    for tri in f:
        out.append("facet normal 0 0 0\nouter loop")
        out += [f"vertex {x:.6f} {y:.6f} {z:.6f}" for x, y, z in v[tri]]
        out.append("endloop\nendfacet")
    return "\n".join(out + ["endsolid tet\n"])


def _collada(v, f, unit: float, up: str) -> str:
    """A minimal COLLADA 1.4 file of one triangle mesh (written by hand, no exporter)."""
    return f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="{unit}" name="unit"/><up_axis>{up}</up_axis></asset>
  <library_geometries><geometry id="g"><mesh>
    <source id="p"><float_array id="pa" count="{v.size}">{" ".join(map(str, v.ravel()))}</float_array>
      <technique_common><accessor source="#pa" count="{len(v)}" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
    <triangles count="{len(f)}"><input semantic="VERTEX" source="#v" offset="0"/>
      <p>{" ".join(map(str, f.ravel()))}</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="s"><node id="n">
    <instance_geometry url="#g"/></node></visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def _stl_vertices(path) -> np.ndarray:
    """The vertices of a binary STL, read with struct (independent of trimesh and MuJoCo)."""
    data = path.read_bytes()
    (n,) = struct.unpack_from("<I", data, 80)
    tris = [struct.unpack_from("<12f", data, 84 + 50 * i)[3:] for i in range(n)]
    return np.unique(np.round(np.array(tris).reshape(-1, 3), 6), axis=0)


def test_ascii_stl_is_converted_and_cached(tmp_path, monkeypatch):
    src = tmp_path / "tet.stl"
    src.write_text(_ascii_stl(TET_V, TET_F))
    assert needs_conversion(src)
    out = mujoco_mesh(src, tmp_path / "cache")
    assert out.parent == tmp_path / "cache" and not needs_conversion(out)
    np.testing.assert_allclose(_stl_vertices(out), np.unique(TET_V, axis=0), atol=1e-6)
    # MuJoCo reads the converted file: the mesh's volume is the tetrahedron's, 1 * 2 * 3 / 6
    spec = mujoco.MjSpec.from_string(
        f'<mujoco><asset><mesh name="m" file="{out}"/></asset>'
        '<worldbody><body><freejoint/><geom type="mesh" mesh="m" '
        'density="1"/></body></worldbody></mujoco>'
    )
    assert spec.compile().body_mass[1] == pytest.approx(1.0, rel=1e-6)
    # the second call reads the cache: trimesh is not used again
    import trimesh

    monkeypatch.setattr(trimesh, "load", lambda *a, **k: pytest.fail("converted again"))
    assert mujoco_mesh(src, tmp_path / "cache") == out
    # a changed file is converted anew (the cache is keyed by the content)
    src.write_text(_ascii_stl(2 * TET_V, TET_F))
    with pytest.raises(pytest.fail.Exception):
        mujoco_mesh(src, tmp_path / "cache")


@pytest.mark.parametrize(
    "unit, up, rotation",
    [
        (1.0, "Z_UP", np.eye(3)),
        (0.01, "Y_UP", np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])),  # y up becomes z up
        (0.001, "X_UP", np.array([[0, 0, -1], [0, 1, 0], [1, 0, 0]])),  # x up becomes z up
    ],
)
def test_collada_units_and_up_axis(tmp_path, unit, up, rotation):
    src = tmp_path / "tet.dae"
    src.write_text(_collada(TET_V, TET_F, unit, up))
    out = mujoco_mesh(src, tmp_path / "cache")
    expected = unit * TET_V @ np.asarray(rotation, dtype=float).T
    np.testing.assert_allclose(
        _stl_vertices(out), np.unique(np.round(expected, 6), axis=0), atol=1e-6
    )
    # the up axis is where it says: the tetrahedron's apex (0, 0, 3) in Z_UP, (0, 2, 0) in Y_UP
    apex = {"Z_UP": TET_V[3], "Y_UP": TET_V[2], "X_UP": TET_V[1]}[up]
    assert _stl_vertices(out)[:, 2].max() == pytest.approx(unit * np.abs(apex).max())


def test_bad_meshes_are_named(tmp_path):
    with pytest.raises(RobotLoadError, match="mesh file not found: .*nope.dae"):
        mujoco_mesh(tmp_path / "nope.dae", tmp_path)
    bad = tmp_path / "bad.dae"
    bad.write_text("<COLLADA>not a mesh</COLLADA>")
    with pytest.raises(RobotLoadError, match="bad.dae"):
        mujoco_mesh(bad, tmp_path)


def test_package_uris_and_urdf_meshes(tmp_path, monkeypatch):
    pkg = tmp_path / "share" / "my_robot"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "meshes" / "tet.stl").write_text(_ascii_stl(TET_V, TET_F))
    urdf = (
        '<robot name="r"><link name="a"><visual><geometry>'
        '<mesh filename="package://my_robot/meshes/tet.stl" scale="1 1 1"/>'
        "</geometry></visual></link></robot>"
    )
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "share"))
    resolved = resolve_package_uris(urdf, tmp_path)
    assert f'filename="{pkg}/meshes/tet.stl"' in resolved
    converted = convert_urdf_meshes(resolved, tmp_path, cache=tmp_path / "cache")
    assert str(tmp_path / "cache") in converted and 'scale="1 1 1"' in converted
    with pytest.raises(RobotLoadError, match="package 'other' not found"):
        resolve_package_uris(urdf.replace("my_robot", "other"), tmp_path)


def test_cache_folder_follows_wbsim_cache(tmp_path, monkeypatch):
    from wbsim.meshes import cache_dir

    monkeypatch.setenv("WBSIM_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" / "meshes"
    monkeypatch.delenv("WBSIM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "wbsim" / "meshes"


def test_the_suite_never_uses_the_home_cache():
    import os
    from pathlib import Path

    from wbsim.meshes import cache_dir

    assert not str(cache_dir()).startswith(str(Path.home()))
    assert not os.environ["ROBOT_DESCRIPTIONS_CACHE"].startswith(str(Path.home()))


def test_talos_full_with_package_uris_and_collada_loads():
    """talos_full_v2.urdf: package:// mesh URIs and COLLADA meshes (MuJoCo failed to compile
    it before conversion)."""
    robot = wbsim.load_robot(
        str(wbsim.robot.example_robot_data_dir() / "talos_data/robots/talos_full_v2.urdf")
    )
    assert robot.n_joints > 32 and not robot.has_feet


def test_mjcf_description_loads_with_parity(tmp_path):
    """An MJCF: the G1 as MuJoCo writes it from its URDF (inertias rounded to 6 digits, so not
    the URDF's model): both models are built from the same MJCF and agree (parity at load)."""
    from wbsim.description import mujoco_spec, read_description
    from wbsim.parity import check_models

    desc = read_description("g1_description/urdf/g1_29dof_rev_1_0.urdf", "g1")
    xml = mujoco_spec(desc, "g1").to_xml()
    # a free joint, actuators and a floor of the file's own, which wbsim replaces
    xml = xml.replace(
        '<body name="pelvis"',
        '<geom name="ground" type="plane" size="1 1 .1"/><body name="pelvis"',
        1,
    ).replace(
        '<body name="pelvis" pos="0 0 0.793">',
        '<body name="pelvis" pos="0 0 0.793"><freejoint name="root"/>',
        1,
    )
    xml = xml.replace("</mujoco>", '<actuator><motor joint="left_knee_joint"/></actuator></mujoco>')
    path = tmp_path / "g1.xml"
    path.write_text(xml)
    feet = {"left_foot": "left_ankle_roll_link", "right_foot": "right_ankle_roll_link"}
    cfg = tmp_path / "g1_mjcf.toml"
    cfg.write_text(
        f'description = "g1.xml"\nfeet = {{ left_foot = "{feet["left_foot"]}", '
        f'right_foot = "{feet["right_foot"]}" }}\n'
    )
    robot = wbsim.load_robot(cfg)
    g1 = wbsim.load_robot("g1")
    assert robot.joint_names == g1.joint_names and robot.mj_model.nu == 29
    assert robot.total_mass == pytest.approx(g1.total_mass, rel=1e-6)  # the 6 rounded digits
    check_models(
        "g1 (MJCF)",
        robot.mj_model,
        robot.pin_model,
        robot.converter,
        robot.joint_limits,
        n_states=20,
        seed=3,
    )
    # wbsim's own free joint, floor and motors; the sole spheres replaced the ankle spheres
    m = robot.mj_model
    assert [m.joint(j).name for j in range(m.njnt) if m.jnt_type[j] == 0] == ["floating_base"]
    assert [m.geom(g).name for g in range(m.ngeom) if m.geom_type[g] == 0] == ["floor"]
    for foot in robot.feet.values():
        body = m.body(foot.link).id
        solid = [g for g in range(m.ngeom) if m.geom_bodyid[g] == body and m.geom_contype[g]]
        assert sorted(solid) == sorted(foot.mj_geom_ids)
    with pytest.raises(RobotLoadError, match="<equality>"):
        bad = tmp_path / "eq.xml"
        bad.write_text(
            xml.replace(
                "</mujoco>",
                '<equality><joint joint1="left_knee_joint" '
                'joint2="right_knee_joint"/></equality></mujoco>',
            )
        )
        wbsim.load_robot(bad)
    # a body with two hinges: Pinocchio would merge them into one composite joint
    import re

    two = re.sub(
        r'(<body name="left_knee_link"[^>]*>)',
        r'\1<joint name="left_knee_twist" axis="0 0 1"/>',
        xml,
        count=1,
    )
    assert two != xml
    (tmp_path / "two.xml").write_text(two)
    cfg.write_text(cfg.read_text().replace("g1.xml", "two.xml"))
    with pytest.raises(RobotLoadError, match="'left_knee_link'.*2 joints.*left_knee_twist"):
        wbsim.load_robot(cfg)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.parametrize("where", ["file", "proc"])
def test_an_unwritable_mesh_cache_is_named_with_its_variable(tmp_path, monkeypatch, where):
    """WBSIM_CACHE on a file, or where nothing can be created (/proc, as a read-only folder):
    the error names the mesh cache, the file and WBSIM_CACHE, not a bare errno."""
    from wbsim.meshes import cache_dir

    src = tmp_path / "tet.stl"
    src.write_text(_ascii_stl(TET_V, TET_F))
    if where == "file":
        (tmp_path / "afile").write_text("")
        monkeypatch.setenv("WBSIM_CACHE", str(tmp_path / "afile"))
    else:
        monkeypatch.setenv("WBSIM_CACHE", "/proc/wbsim-cache")
    with pytest.raises(RobotLoadError) as err:
        mujoco_mesh(src)
    message = str(err.value)
    assert f"mesh cache {cache_dir()}" in message and "tet.stl" in message
    assert "$WBSIM_CACHE must be a writable folder" in message
