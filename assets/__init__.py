"""Scene files shared by every robot (installed as ``wbsim.assets``)."""
from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent
SCENE_XML = ASSETS_DIR / "scene.xml"
