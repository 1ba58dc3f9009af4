"""The ``wbsim`` command line: ``list``, ``run``, ``statics``, ``report``, ``replay``, ``baseline``,
``bench``, ``soak``, ``pushtest``, ``dcc``.

Each subcommand parses its arguments and calls one library function; no physics or control here.
Errors of wbsim (unknown names, bad files) print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import wbsim
from wbsim.baseline import DEFAULT_EPISODES
from wbsim.envs import RESET_NOISE_SCALE
from wbsim.errors import WbsimError

__all__ = ["main"]


def _add_option_arguments(p: argparse.ArgumentParser, controller_eg: str, env_eg: str) -> None:
    """``-c`` / ``--controller-option`` and ``-e`` / ``--env-option`` ``KEY=VALUE`` (repeatable;
    :func:`_parse_options` reads them), with an example of each in the help."""
    for flag, short, what, eg in (
        ("--controller-option", "-c", "controller", controller_eg),
        ("--env-option", "-e", "env", env_eg),
    ):
        p.add_argument(
            flag,
            short,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"{what} option, e.g. {short} {eg} (repeatable)",
        )


def _add_tolerance_argument(p: argparse.ArgumentParser) -> None:
    """``-t`` / ``--tolerance`` ``KEY=VALUE`` (repeatable): an event tolerance."""
    p.add_argument(
        "--tolerance",
        "-t",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="event tolerance (wbsim.diagnostics.Tolerances), e.g. -t force_sign=0.1",
    )


def _add_progress_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--no-progress``: no ``what`` (every subcommand that shows progress takes it)."""
    p.add_argument("--no-progress", action="store_true", help=f"no {what}")


def _parse_options(pairs: Sequence[str]) -> dict:
    """``key=value`` strings -> dict, values parsed as JSON when they parse (``3``, ``true``)."""
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise WbsimError(f"option {pair!r} is not key=value")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _refuse_empty_paths(args: argparse.Namespace, *names: str) -> None:
    """Raise :class:`WbsimError` for a path option given as ``""`` (e.g. ``--log ""``, an unset
    shell variable), which would otherwise mean silently "none" or "the default"."""
    for name in names:
        if getattr(args, name) is not None and not str(getattr(args, name)).strip():
            flag = "--" + name.replace("_", "-")
            raise WbsimError(f"{flag} is an empty path: give a path, or leave {flag} out")


def cmd_list(args: argparse.Namespace) -> int:
    import warnings

    from wbsim.controllers import available_controllers, shadowed_plugins
    from wbsim.envs import ENV_IDS

    print(f"{'robot':<8} {'joints':>6} {'mass kg':>8}  feet (contact points); description")
    notes = []
    for name in wbsim.ROBOTS:
        with warnings.catch_warnings(record=True) as caught:  # the loader's notes, listed below
            warnings.simplefilter("always")
            robot = wbsim.load_robot(name)
        notes += [str(w.message) for w in caught]
        feet = ", ".join(f"{f.name} ({f.link}, {len(f.point_names)})" for f in robot.feet.values())
        print(
            f"{name:<8} {robot.n_joints:>6} {robot.total_mass:>8.2f}  {feet}; "
            f"{wbsim.ROBOTS[name].description}"
        )
    for note in dict.fromkeys(notes):
        print(f"  note: {note}")
    print("\nenvs:        " + ", ".join(ENV_IDS))
    print("\ncontrollers (name: from where; or any package.module:Class):")
    for name, origin in available_controllers().items():
        print(f"  {name:<14} {origin}")
    for name, origin in shadowed_plugins().items():
        target = origin.rpartition("(")[2].rstrip(")")
        print(
            f"  note: the plug-in {name!r} of {origin} is named like a built-in controller, "
            f"which wins; run it as --controller {target}"
        )
    return 0


def _default_env(robot: str | None) -> str:
    """The env ``wbsim run`` runs without ``--env``: the stand env registered for ``robot`` (a
    name), else ``wbsim/G1Stand-v0`` (with the robot swapped in, if one is given)."""
    from wbsim.envs import ENV_IDS

    for env_id, kwargs in ENV_IDS.items():
        if robot is not None and kwargs.get("robot") == robot and env_id.endswith("Stand-v0"):
            return env_id
    return "wbsim/G1Stand-v0"


def cmd_run(args: argparse.Namespace) -> int:
    from wbsim.controllers import check_controller_options
    from wbsim.rollout import EpisodeConfig, _install_sigint_as_keyboard_interrupt

    _install_sigint_as_keyboard_interrupt()
    _refuse_empty_paths(args, "log", "video", "robot", "robot_config")
    if args.web and args.viewer:  # before the web server starts and prints its address
        raise WbsimError(
            "MuJoCo's viewer (--viewer) and the web viewer (--web) cannot be combined: pick one"
        )
    controller_options = _parse_options(args.controller_option)
    if args.id_variant:
        if args.controller != "projected_id":
            raise WbsimError(
                f"--id-variant applies to projected_id only (the controller is "
                f"{args.controller}; add --controller projected_id)"
            )
        controller_options["variant"] = args.id_variant
    check_controller_options(args.controller, controller_options)  # before any work
    env_options = _parse_options(args.env_option)
    if args.robot or args.robot_config:
        if "robot" in env_options:
            raise WbsimError("give the robot once: --robot (and --robot-config) or -e robot=...")
        from wbsim.robot import is_robot_path, resolve_config

        if not args.robot and not Path(args.robot_config).expanduser().is_file():
            # alone, the config file is the robot (it names its description): say which file
            raise WbsimError(f"robot config file not found: {Path(args.robot_config).expanduser()}")
        config = (
            resolve_config(args.robot, args.robot_config)
            if args.robot
            else resolve_config(args.robot_config)
        )  # checked here, before any work
        # a name stays a name (config.json then says "icub"); a file or a name with a config is
        # the config (the log records its fields, which rebuild it: wbsim replay)
        named = args.robot and not args.robot_config and not is_robot_path(args.robot)
        env_options["robot"] = args.robot if named else config
    env = args.env or _default_env(args.robot)
    if args.seconds is None:
        from wbsim.envs import time_limit

        args.seconds = time_limit(env)  # as wbsim baseline; an unknown id lists the known ones
    cfg = EpisodeConfig(
        env=env,
        controller=args.controller,
        seconds=args.seconds,
        video=args.video,
        log=args.log,
        seed=args.seed,
        fps=args.fps,
        width=args.width,
        height=args.height,
        controller_options=controller_options,
        env_options=env_options,
        progress=not args.no_progress,
        viewer=args.viewer,
        tolerances=_parse_options(args.tolerance),
        overwrite=args.overwrite,
        low_level=args.low_level,
    )
    if not (np.isfinite(args.seconds) and args.seconds > 0):
        raise WbsimError(f"--seconds must be a positive number, got {args.seconds}")
    if not (np.isfinite(args.fps) and args.fps > 0):
        raise WbsimError(f"--fps must be a positive number, got {args.fps}")
    import time

    started = time.time() - 1.0  # file times may be rounded to the second
    cfg.web = _web_viewer(args) if args.web else None
    try:
        return _run(cfg, args, started)
    finally:
        if cfg.web is not None:
            cfg.web.close()


def _run(cfg, args: argparse.Namespace, started: float) -> int:
    """``wbsim run`` once its arguments are checked: the episode, then the summary."""
    import time

    from wbsim.rollout import run_episode

    try:
        summary = run_episode(cfg)
    except KeyboardInterrupt as exc:
        partial = getattr(exc, "summary", None)  # the steps run before Ctrl-C (run_episode)
        if partial is not None:
            print(json.dumps(partial, indent=2), flush=True)

        # say only what this run wrote: Ctrl-C during start-up leaves no log and no video (and an
        # --overwrite run may find the previous run's files)
        def written(path: Path) -> bool:
            return path.is_file() and path.stat().st_size > 0 and path.stat().st_mtime >= started

        said = []
        if args.log:
            said.append(
                f"what was logged is in {args.log}, closed and readable"
                if written(Path(args.log) / "summary.json")
                else f"no log was written ({args.log}: interrupted before the episode)"
            )
        if args.video:
            said.append(
                f"the video is in {args.video}, closed and readable"
                if written(Path(args.video))
                else "no video was written (interrupted before its first frame)"
            )
        term = partial is not None and partial.get("stopped_reason") == "SIGTERM"
        print(
            f"wbsim run: {'terminated (SIGTERM)' if term else 'interrupted'}"
            + ("; " + "; ".join(said) if said else ""),
            file=sys.stderr,
        )
        return 143 if term else 130
    print(json.dumps(summary, indent=2), flush=True)
    if cfg.web is not None:  # the last frame stays on the page
        print(
            f"web viewer: the episode ended; {cfg.web.url} shows its last frame until Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
    if summary["status"] in ("stopped", "error"):
        print(f"wbsim run: {summary['status']}: {summary['stopped_reason']}", file=sys.stderr)
        return 1
    return 0


def _load_pose(robot, args: argparse.Namespace) -> np.ndarray:
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise WbsimError(f"pose file not found: {path}")
        try:
            pose = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise WbsimError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(pose, dict):
            raise WbsimError(f"{path}: expected a JSON object")
        unknown = set(pose) - {"base_position", "base_quaternion_wxyz", "joints"}
        if unknown:
            raise WbsimError(
                f"{path}: unknown keys {sorted(unknown)}; known: base_position, "
                "base_quaternion_wxyz, joints"
            )
        stand = robot.pose("stand") if "stand" in robot.poses else None
        given = pose.get("joints", {})
        if not isinstance(given, dict):
            raise WbsimError(
                f"{path}: joints must be an object of joint name -> angle (rad), got "
                f"{type(given).__name__}"
            )
        for name, value in given.items():
            if type(value) not in (int, float) or not np.isfinite(value):
                raise WbsimError(
                    f"{path}: joint {name} must be a finite number (rad), got {value!r}"
                )
            if name in robot.joint_names:
                lo, hi = robot.joint_limits[robot.joint_names.index(name)]
                if not lo <= value <= hi:
                    raise WbsimError(
                        f"{path}: joint {name} = {value:g} rad is outside its limits "
                        f"[{lo:g}, {hi:g}]"
                    )
        try:
            base = np.asarray(
                pose.get("base_position", stand.base_position if stand else [0, 0, 1]), dtype=float
            )
            quat = np.asarray(pose.get("base_quaternion_wxyz", [1, 0, 0, 0]), dtype=float)
            joints = {
                **(dict(stand.joints) if stand else {}),
                **{k: float(v) for k, v in given.items()},
            }
        except (TypeError, ValueError) as exc:
            raise WbsimError(f"{path}: values must be numbers ({exc})") from None
        if (
            base.shape != (3,)
            or quat.shape != (4,)
            or not np.all(np.isfinite(base))
            or not (np.all(np.isfinite(quat)) and np.linalg.norm(quat) > 0)
        ):
            raise WbsimError(
                f"{path}: base_position needs 3 numbers and base_quaternion_wxyz 4 (non-zero)"
            )
        return robot.configuration(base, quat, joints)
    return robot.pose_q(args.pose)


def cmd_statics(args: argparse.Namespace) -> int:
    from wbsim.controllers import controller_class

    robot = wbsim.load_robot(args.robot)
    q = _load_pose(robot, args)
    support = list(dict.fromkeys(s.strip() for s in args.support.split(",") if s.strip()))
    if not support:
        raise WbsimError("--support needs at least one foot, e.g. left_foot,right_foot")
    for foot in support:
        robot.foot(foot)  # unknown foot names list the known ones
    solver_cls = controller_class("gravity_qp")
    options = {"contact_model": args.contact_model, "method": args.method}
    if args.solver:
        options["solver"] = args.solver
    result = solver_cls(robot, **options).solve(q, support)
    data = result.to_dict()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        residual = data["residual"]
        print(
            f"method {data['method']}  feasible {data['feasible']}  residual "
            + (f"{residual:.2e} N·m" if residual is not None else "-")
        )
        if not data["feasible"]:
            print(f"  {data.get('status', 'infeasible')}")
        for name, value in data["tau"].items():
            print(f"  tau {name:<28} " + (f"{value:9.3f} N·m" if value is not None else "-"))
        for name, value in data["contact_forces"].items():
            print(
                f"  f   {name:<28} "
                + " ".join(f"{x:9.3f}" if x is not None else "-" for x in value)
            )
    return 0 if data["feasible"] else 1


def cmd_report(args: argparse.Namespace) -> int:
    from wbsim.report import report

    _refuse_empty_paths(args, "plots")
    out = report(args.runs, html=args.html, plots_dir=args.plots)
    if out.runs:  # all bad: no empty table, only the errors
        print(out.table, flush=True)
    for path in out.written:
        print(f"{'page' if path.suffix == '.html' else 'plot'}: {path}")
    for note in out.notes:
        print(f"wbsim report: note: {note}", file=sys.stderr)
    for folder, reason in out.problems:  # the folder once: most reasons name it already
        where = "" if str(folder) in reason else f"{folder}: "
        print(f"wbsim report: error: {where}{reason}", file=sys.stderr)
    return 2 if out.problems else 0


def _web_viewer(args: argparse.Namespace):
    """The web viewer of ``--web`` (listening before any work; its address on stderr)."""
    from wbsim.web_viewer import WebViewer

    web = WebViewer(args.web_host, args.web_port)
    print(f"web viewer: {web.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    return web


def _add_web_options(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--web", action="store_true", help=f"in the web browser (viser): show {what}")
    p.add_argument(
        "--web-host",
        default="127.0.0.1",
        help="interface the web viewer listens on (127.0.0.1: this machine only; 0.0.0.0: "
        "every interface)",
    )
    p.add_argument("--web-port", type=int, default=8080, help="the web viewer's port")


def cmd_replay(args: argparse.Namespace) -> int:
    from wbsim.replay import replay_video, replay_web
    from wbsim.rollout import _install_sigint_as_keyboard_interrupt

    _install_sigint_as_keyboard_interrupt()  # kill -TERM too closes the video and the server
    _refuse_empty_paths(args, "video")
    if args.web:
        web = _web_viewer(args)
        try:
            replay_web(args.run, web, start=args.start, end=args.end, fps=args.fps)
        except KeyboardInterrupt:
            pass
        finally:
            web.close()
        return 0
    out = replay_video(
        args.run,
        args.video,
        camera=args.camera,
        start=args.start,
        end=args.end,
        fps=args.fps,
        overwrite=args.overwrite,
    )
    print(
        f"replay: {out['frames']} frames ({out['start']:.3f}-{out['end']:.3f} s, "
        f"{out['fps']:g} fps) -> {out['video']}"
    )
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    from wbsim.baseline import default_json_path, format_comparison, load_baseline, run_baseline
    from wbsim.controllers import check_controller_options

    if args.compare:
        print(format_comparison([load_baseline(path) for path in args.compare]))
        return 0
    _refuse_empty_paths(args, "json")
    controller_options = _parse_options(args.controller_option)
    check_controller_options(args.controller, controller_options)  # before any episode
    env_options = _parse_options(args.env_option)
    tolerances = _parse_options(args.tolerance)
    json_path = args.json or default_json_path(
        args.env,
        args.controller,
        controller_options,
        env_options,
        tolerances,
        episodes=args.episodes,
        seconds=args.seconds,
        reset_noise_scale=args.reset_noise,
        seed=args.seed,
    )
    out = run_baseline(
        args.env,
        args.controller,
        episodes=args.episodes,
        seed=args.seed,
        seconds=args.seconds,
        reset_noise_scale=args.reset_noise,
        controller_options=controller_options,
        env_options=env_options,
        tolerances=tolerances,
        json_path=json_path,
        progress=not args.no_progress,
        workers=args.workers,
        address=args.address,
        overwrite=args.overwrite,
    )
    n = out["episodes"]
    print(
        f"{out['env']} {out['controller']}: {n} episode{'' if n == 1 else 's'} of "
        f"{out['seconds']:g} s"
    )
    print(f"  return        {out['return_mean']:.2f} ± {out['return_std']:.2f}")
    print(f"  success rate  {out['success_rate']:.2f}  ({_not_successes(out)})")
    print(f"  length        {out['length_mean']:.1f} ± {out['length_std']:.1f} steps")
    print(f"  events (sum over episodes) {json.dumps(out['events'])}")
    print(f"  written to    {json_path}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from wbsim.bench import run_bench

    return run_bench(
        robot=args.robot,
        json_path=args.json,
        quick=args.quick,
        progress=not args.no_progress,
        controller=args.controller,
        controller_options=_parse_options(args.controller_option),
    )


def cmd_soak(args: argparse.Namespace) -> int:
    from wbsim.soak import run_soak

    report = run_soak(
        args.episodes,
        seconds=args.seconds,
        seed=args.seed,
        json_path=args.json,
        progress=not args.no_progress,
        overwrite=args.overwrite,
    )
    failures = len(report["crashes"]) + len(report["nan_logs"]) + len(report["bad"])
    n = report["episodes"]
    print(
        f"wbsim soak: {n} episode{'' if n == 1 else 's'} in {report['wall_seconds']:.0f} s; "
        f"statuses {report['statuses']}; crashes {len(report['crashes'])}, logs with NaN "
        f"{len(report['nan_logs'])}, wrong statuses or files {len(report['bad'])}"
    )
    for item in report["crashes"] + report["nan_logs"] + report["bad"]:
        print(
            f"  episode {item['episode']} ({item['what']}, seed {item['seed']}): "
            f"{item.get('error') or item.get('problem')}"
        )
    return 1 if failures else 0


def _not_successes(out: dict) -> str:
    """``fell N`` and, when the loop stopped episodes (a NaN torque, a MuJoCo failure), how many
    and the first one's seed and reason: such an episode is neither a success nor a fall."""
    from wbsim.baseline import STOPPED

    text = f"fell {out['fell']}"
    stopped = [p for p in out["per_episode"] if p.get("status") in STOPPED]
    if stopped:
        first = stopped[0]
        text += f", stopped {len(stopped)}; seed {first['seed']}: {first['stopped_reason']}"
    return text


#: The plot of ``wbsim pushtest --compare`` without ``--plot``.
COMPARE_PLOT = "pushtests/compare.png"


def cmd_pushtest(args: argparse.Namespace) -> int:
    """``wbsim pushtest``: the push-recovery protocol (wbsim.pushtest)."""
    from wbsim.pushtest import (
        PushTestConfig,
        default_paths,
        load_push_test,
        no_fall_note,
        plot_push_test,
        run_push_test,
    )

    _refuse_empty_paths(args, "json", "plot")
    if args.compare:
        from wbsim.errors import check_output_file

        plot = check_output_file(args.plot or COMPARE_PLOT, "push-test plot", args.overwrite)
        results = [load_push_test(path) for path in args.compare]
        out = plot_push_test(results, plot)
        print(f"wbsim pushtest: plot {out}")
        return 0
    from wbsim.controllers import check_controller_options

    controller_options = _parse_options(args.controller_option)
    check_controller_options(args.controller, controller_options)  # before any trial
    cfg = PushTestConfig(
        env=args.env,
        controller=args.controller,
        directions=args.directions,
        at=args.at,
        duration=args.duration,
        settle=args.settle,
        start=args.start,
        growth=args.growth,
        limit=args.limit,
        refine=args.refine,
        seed=args.seed,
        controller_options=controller_options,
        env_options=_parse_options(args.env_option),
    )
    json_default, plot_default = default_paths(cfg)
    json_path = args.json or json_default
    plot_path = args.plot or plot_default
    res = run_push_test(
        cfg,
        json_path,
        plot_path,
        progress=None if args.no_progress else (lambda line: print(line, file=sys.stderr)),
        overwrite=args.overwrite,
    )
    print(
        f"{cfg.env} {cfg.controller}: push at {cfg.at:g} s ({res['phase']['name']}, "
        f"{res['phase']['time_in_phase_s']:.2f} s in), {cfg.duration:g} s on the torso"
    )
    for deg, imp, open_ended in zip(res["directions_deg"], res["max_impulse"], res["no_fall"]):
        print(
            f"  {deg:5.1f} deg  {imp:6.2f} N s  ({imp / cfg.duration:6.1f} N)"
            + (no_fall_note(cfg.limit) if open_ended else "")
        )
    print(
        f"  least over directions {res['min_over_directions']:.2f} N s; JSON {json_path}, "
        f"plot {plot_path}; {res['wall_seconds']:.0f} s"
    )
    return 0


def cmd_dcc(args: argparse.Namespace) -> int:
    """``wbsim dcc toy|plan|compare``: dynamic complementarity conditions (wbsim.planning)."""
    if args.dcc_command == "toy":
        from wbsim.planning.toy import run_toy

        return run_toy(args.json, args.repeats, args.ipopt_defaults, args.overwrite)
    from wbsim.planning.receding import run_compare, run_plan

    if args.dcc_command == "plan":
        return run_plan(
            out=args.out,
            task=args.task,
            formulation=args.formulation,
            params=_parse_options(args.param),
            seconds=args.seconds,
            knots=args.knots,
            speed=args.speed,
            video=args.video,
            rest=None if args.no_rest else args.rest,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    return run_compare(
        json_path=args.json,
        task=args.task,
        steps=args.steps,
        knots=args.knots,
        overwrite=args.overwrite,
    )


#: The walk speed of ``dcc compare`` (``wbsim.planning.receding.Task``'s default, m/s; a test
#: checks they agree: the planner is not imported to build the parser).
_DCC_WALK_SPEED = 0.1


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Argparse's "(default: X)" only where it says something: not for an unset option (``None``,
    an empty list, a flag) nor where the help already gives the default in words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        unset = action.default is None or action.default is False or action.default == []
        if unset or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wbsim",
        description=wbsim.__doc__.splitlines()[0],
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"wbsim {wbsim.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "list",
        formatter_class=_HelpFormatter,
        help="known robots (DoF, mass, feet), envs and controllers",
    )
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "run",
        formatter_class=_HelpFormatter,
        help="run one episode headless, write a video and a log",
    )
    p.add_argument(
        "--env",
        help="env id (wbsim list shows them); default: wbsim/G1Stand-v0, or the stand env "
        "registered for --robot (e.g. wbsim/ICubStand-v0 for icub)",
    )
    p.add_argument(
        "--controller", default="gravity_qp", help="controller name (wbsim list shows them)"
    )
    p.add_argument(
        "--robot",
        help="robot for the env: a name (wbsim list), a .urdf or .xml "
        "description (with --robot-config) or a .toml config; default: the env's",
    )
    p.add_argument(
        "--robot-config",
        metavar="CFG.toml",
        help="robot config (feet links, ...; README: Use your own robot)",
    )
    p.add_argument(
        "--seconds", type=float, help="simulated time, s (default: the env's time limit)"
    )
    p.add_argument("--video", help="MP4 path (H.264), new (see --overwrite)")
    p.add_argument("--log", help="episode folder, new or empty (see --overwrite)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="let --log replace the run in a folder that is not empty, "
        "and --video replace an existing file",
    )
    p.add_argument("--seed", type=int, default=0, help="reset seed")
    p.add_argument("--fps", type=float, default=30.0, help="video frames per second")
    p.add_argument("--width", type=int, default=640, help="video frame width, pixels")
    p.add_argument("--height", type=int, default=480, help="video frame height, pixels")
    _add_option_arguments(p, "frequency_hz=3", "push_magnitude=40")
    p.add_argument(
        "--id-variant",
        choices=["qp", "pinv"],
        help="projected_id's inverse dynamics (same as -c variant=...)",
    )
    _add_tolerance_argument(p)
    p.add_argument(
        "--viewer",
        action="store_true",
        help="MuJoCo's viewer in real time with the overlay (needs a display)",
    )
    p.add_argument(
        "--low-level",
        choices=["pd", "hold"],
        default="pd",
        help="between two controller steps (-e frame_skip=k): run the command's joint "
        "PD at every physics step (pd) or hold its torque (hold)",
    )
    _add_progress_argument(p, "progress bar on stderr (shown on a terminal only)")
    _add_web_options(p, "the run live, in real time; the page stays up after the episode")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "statics",
        formatter_class=_HelpFormatter,
        help="one static (gravity compensation) solve",
    )
    p.add_argument("--robot", default="g1")
    p.add_argument(
        "--config",
        help="pose JSON: base_position (m, world), base_quaternion_wxyz, "
        "joints (name -> rad); what it leaves out is taken from the stand pose",
    )
    p.add_argument("--pose", default="stand", help="named pose when --config is not given")
    p.add_argument("--support", default="left_foot,right_foot")
    p.add_argument("--contact-model", default="points", choices=["points", "wrench"])
    p.add_argument("--method", default="qp", choices=["qp", "pinv", "min_torque", "single"])
    p.add_argument("--solver", help="QP solver (qpsolvers name)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_statics)

    p = sub.add_parser(
        "baseline",
        formatter_class=_HelpFormatter,
        help="a controller's statistics over seeded episodes",
    )
    p.add_argument("--env", default="wbsim/G1Stand-v0", help="env id (wbsim list shows them)")
    p.add_argument(
        "--controller", default="gravity_qp", help="controller name (wbsim list shows them)"
    )
    p.add_argument("--episodes", type=int, default=DEFAULT_EPISODES, help="seeded episodes")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the first episode (then seed + 1, ...)"
    )
    p.add_argument("--seconds", type=float, help="episode length, s (default: the env's limit)")
    p.add_argument(
        "--reset-noise", type=float, default=RESET_NOISE_SCALE, help="joint noise at reset, rad"
    )
    _add_option_arguments(p, "variant=pinv for projected_id", "noslip_iterations=5")
    _add_tolerance_argument(p)
    p.add_argument(
        "--json",
        help="output JSON (default baselines/<env>_<controller>.json, with "
        "-key=value for each -c option that is not the controller's default, each -e and "
        "-t option, and --episodes, --seconds, --reset-noise and --seed when not their "
        "defaults, e.g. -episodes=2-seconds=3)",
    )
    _add_progress_argument(
        p, "progress bar on stderr, per episode or of the Ray tasks (on a terminal only)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing JSON")
    p.add_argument(
        "--workers",
        type=int,
        help="run the episodes as Ray tasks, N at a time (on a "
        "local Ray with N CPUs, or on --address); the same JSON as without",
    )
    p.add_argument(
        "--address",
        help="an existing Ray cluster (auto, HOST:6379, ray://HOST:10001); needs --workers",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="JSON",
        help="only print these baseline JSONs side by side as one table, e.g. yours and "
        "docs/baselines/G1Stand-v0_gravity_qp.json (no episodes)",
    )
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser(
        "bench",
        formatter_class=_HelpFormatter,
        help="speed against raw mj_step and Humanoid-v5, in one run",
    )
    p.add_argument("--robot", default="g1")
    p.add_argument("--json", help="write the figures as JSON")
    p.add_argument(
        "--quick", action="store_true", help="few repetitions (a smoke test, not figures)"
    )
    p.add_argument(
        "--controller",
        help="also measure this controller's compute and closed loop, e.g. your "
        "package.module:Class (beside the built-in ones, against the same mj_step)",
    )
    p.add_argument(
        "--controller-option",
        "-c",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of --controller, e.g. -c kp=400 (repeatable)",
    )
    _add_progress_argument(p, "line on stderr as each stage starts (notes are still shown)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "soak",
        formatter_class=_HelpFormatter,
        help="many seeded episodes over every env, controller and action mode: no "
        "crash, no NaN, every log loads",
    )
    p.add_argument(
        "--episodes",
        type=int,
        default=1000,
        help="episodes to run; every env and kind pair once per cycle of (envs x kinds) episodes",
    )
    p.add_argument("--seconds", type=float, default=2.0, help="simulated time per episode, s")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="shuffles the order of the env and kind pairs (another seed, other pairs in a "
        "short soak); episode i runs with seed SEED + i (reset noise, random actions)",
    )
    p.add_argument("--json", help="write the report as JSON (new, see --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --json")
    _add_progress_argument(p, "line per episode on stdout")
    p.set_defaults(func=cmd_soak)

    p = sub.add_parser(
        "pushtest",
        formatter_class=_HelpFormatter,
        help="push recovery: largest impulse on the torso survived per direction "
        "(polar plot + JSON)",
    )
    p.add_argument("--env", default="wbsim/G1Stand-v0", help="env id (wbsim list shows them)")
    p.add_argument(
        "--controller", default="projected_id", help="controller name (wbsim list shows them)"
    )
    p.add_argument("--directions", type=int, default=8, help="push directions, from +x (forward)")
    p.add_argument("--at", type=float, default=2.5, help="push start, s")
    p.add_argument("--duration", type=float, default=0.1, help="push duration, s")
    p.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="the robot must stay up this long after the push start, s",
    )
    p.add_argument("--start", type=float, default=4.0, help="first impulse, N s")
    p.add_argument("--growth", type=float, default=1.5, help="ladder factor per rung")
    p.add_argument("--limit", type=float, default=80.0, help="largest impulse tried, N s")
    p.add_argument("--refine", type=int, default=3, help="bisections after the ladder")
    p.add_argument("--seed", type=int, default=0, help="seed of every trial episode")
    _add_option_arguments(p, "cmp_reach=0.04", "noslip_iterations=5")
    p.add_argument(
        "--json",
        help="output JSON (default pushtests/<env>_<controller>[-key=value...].json, named as "
        "wbsim baseline names its JSONs, with the options and settings that differ from the "
        "defaults)",
    )
    p.add_argument(
        "--plot",
        help="polar plot PNG (default the default JSON's name with .png; with --compare "
        f"{COMPARE_PLOT})",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="JSON",
        help="only plot these results together into --plot (no episodes)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing JSON (and its plot), or an existing --compare plot",
    )
    _add_progress_argument(p, "line per direction on stderr")
    p.set_defaults(func=cmd_pushtest)

    p = sub.add_parser(
        "report",
        formatter_class=_HelpFormatter,
        help="table of runs, plots per run (--html: one page per run)",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.add_argument(
        "--html",
        action="store_true",
        help="also write RUN_DIR/report.html: summary, plots and video in one file",
    )
    p.add_argument(
        "--plots",
        metavar="DIR",
        help="write the plots (and pages) to DIR/RUN_NAME/ instead of each run folder "
        "(e.g. for read-only runs)",
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser(
        "replay",
        formatter_class=_HelpFormatter,
        help="re-render a logged run with the overlay, frame for frame as its live video",
    )
    p.add_argument("run", metavar="RUN_DIR", help="a run folder (wbsim run --log)")
    p.add_argument("--video", help="MP4 path (default RUN_DIR/replay.mp4)")
    p.add_argument(
        "--camera",
        help="track (follows the robot) or a model camera: front, side (default: the live "
        "video's, i.e. the run's -e camera_name / camera_id / default_camera_config, else track)",
    )
    p.add_argument("--start", type=float, help="from this time, s")
    p.add_argument("--end", type=float, help="until this time, s")
    p.add_argument("--fps", type=float, help="frames per second (default: the live video's)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing video file")
    _add_web_options(p, "the run (a time slider and a play button) instead of writing a video")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("dcc", help="dynamic complementarity conditions: toy, G1 plan, comparison")
    dcc = p.add_subparsers(dest="dcc_command", required=True)
    q = dcc.add_parser(
        "toy",
        formatter_class=_HelpFormatter,
        help="the point-mass comparison over the seed's parameter grid",
    )
    q.add_argument("--json", help="write the results (with trajectories) as JSON")
    q.add_argument("--repeats", type=int, default=3, help="solves per setting (median time)")
    q.add_argument("--overwrite", action="store_true", help="replace an existing --json")
    q.add_argument(
        "--ipopt-defaults",
        action="store_true",
        help="IPOPT's default start options (shows the local minima)",
    )
    for name, text in (
        ("plan", "plan a G1 motion in receding horizon, write .npz (+ video)"),
        ("compare", "receding-horizon G1 planning per formulation: time, h f_n"),
    ):
        q = dcc.add_parser(name, formatter_class=_HelpFormatter, help=text)
        q.add_argument(
            "--task",
            default="step",
            choices=["step", "walk"],
            help="step in place, or walk forward at --speed"
            if name == "plan"
            else f"step in place, or walk forward at {_DCC_WALK_SPEED:g} m/s",
        )
        q.add_argument("--knots", type=int, default=10, help="horizon knots (dt 0.1 s)")
        q.add_argument(
            "--overwrite",
            action="store_true",
            help="replace existing outputs ("
            + ("--out, --video)" if name == "plan" else "--json)"),
        )
        if name == "plan":
            q.add_argument("--out", default="runs/dcc_plan.npz", help="plan file (.npz)")
            q.add_argument("--video", help="MP4 of the kinematic replay with the point forces")
            q.add_argument("--formulation", default="baumgarte", help="relaxed, baumgarte or sech")
            q.add_argument(
                "--param",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="formulation parameter, e.g. --param eps=0.05 (repeatable)",
            )
            q.add_argument(
                "--seconds",
                type=float,
                default=4.5,
                help="planned duration, s (with the end at rest, 3.1 s or more for a sway)",
            )
            q.add_argument(
                "--speed", type=float, default=_DCC_WALK_SPEED, help="walk: forward speed, m/s"
            )
            q.add_argument(
                "--rest",
                type=float,
                default=0.3,
                help="the plan ends at rest: the CoM reference's sway (and walk) slows to a stop "
                "at the feet's middle after whole half-periods, still for at least the last "
                "REST s",
            )
            q.add_argument(
                "--no-rest",
                action="store_true",
                help="no end at rest: the sway runs until --seconds (plans stop mid-motion)",
            )
            _add_progress_argument(q, "line per solve on stderr")
        else:
            q.add_argument("--steps", type=int, default=20, help="receding-horizon solves (K)")
            q.add_argument("--json", help="write the results as JSON")
    p.set_defaults(func=cmd_dcc)
    return parser


def _from_wbsim(filename: str) -> bool:
    """Whether ``filename`` is a module of wbsim (its core, controllers or envs)."""
    path = Path(filename)
    roots = [
        Path(str(sys.modules[name].__file__)).parent
        for name in ("wbsim", "wbsim.controllers", "wbsim.envs")
        if getattr(sys.modules.get(name), "__file__", None)
    ]
    return any(path.is_relative_to(root) for root in roots)


def _notes_as_lines(command: str):
    """A ``warnings.showwarning`` that prints wbsim's own ``UserWarning``s (e.g. inertias made
    physical at load) as ``wbsim COMMAND: note: ...`` lines on stderr, without a source line;
    any other warning as Python shows it."""
    import warnings

    show = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, UserWarning) and _from_wbsim(filename):
            print(f"wbsim {command}: note: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    return showwarning


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _notes_as_lines(args.command)
        return _run_command(args)


def _run_command(args: argparse.Namespace) -> int:
    from wbsim._headless import check_gl_backend
    from wbsim._signals import end_cli_start

    try:
        end_cli_start()  # from here a Ctrl-C is the command's (KeyboardInterrupt, below)
        check_gl_backend()  # a MUJOCO_GL that cannot work fails every command the same way
        return args.func(args)
    except WbsimError as exc:
        print(f"wbsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError as exc:
        if _stdout_closed():  # its reader went away (`wbsim list | head -3`): stop, quietly
            return 141  # as a command killed by SIGPIPE
        print(f"wbsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an output path that cannot be written, a full disk
        print(f"wbsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # `run` handles its own; the others stop where they are
        print(
            f"wbsim {args.command}: interrupted (Ctrl-C); what it had written is left as it is",
            file=sys.stderr,
        )
        return 130


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone away (``poll`` reports an error on
    it); if so, standard output is pointed at the null device, so that Python's own flush at exit
    does not report the broken pipe again."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):  # no poll here, or no file behind stdout
        return False
    if not any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events):
        return False
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return True


if __name__ == "__main__":
    sys.exit(main())
