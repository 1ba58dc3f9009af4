"""Scene files shared by every robot (installed as ``wbsim.assets``)."""
from pathlib import Path

__all__ = ["ASSETS_DIR", "SCENE_XML"]

ASSETS_DIR = Path(__file__).resolve().parent
SCENE_XML = ASSETS_DIR / "scene.xml"
