"""`plain-shapes` in Python: a plain WIT component built with componentize-py against
its own world (wit/world.wit), without Evo's SDK or WIT."""

import math

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import geometry


class Geometry(exports.Geometry):
    def area(self, s: geometry.Shape) -> float:
        if isinstance(s, geometry.Shape_Circle):
            return math.pi * s.value * s.value
        return abs(s.value.x * s.value.y)

    def centroid(self, points: list[geometry.Point]) -> geometry.Point:
        if not points:
            raise Err("there are no points")
        return geometry.Point(
            x=sum(p.x for p in points) / len(points),
            y=sum(p.y for p in points) / len(points),
        )


class WitWorld:
    def greet(self, name: str) -> str:
        return f"hello, {name}"

    def double(self, n: int) -> int:
        return (n * 2) % (1 << 64)
