// `plain-shapes` in JavaScript: a plain WIT component built with ComponentizeJS against
// its own world (wit/world.wit), without Evo's SDK or WIT.

export const geometry = {
  area(s) {
    switch (s.tag) {
      case 'circle':
        return Math.PI * s.val * s.val;
      case 'rect':
        return Math.abs(s.val.x * s.val.y);
      default:
        throw new Error(`unknown shape ${s.tag}`);
    }
  },
  centroid(points) {
    if (points.length === 0) {
      throw 'there are no points';
    }
    const sum = points.reduce((a, p) => ({ x: a.x + p.x, y: a.y + p.y }), { x: 0, y: 0 });
    return { x: sum.x / points.length, y: sum.y / points.length };
  },
};

export function greet(name) {
  return `hello, ${name}`;
}

export function double(n) {
  return BigInt.asUintN(64, n * 2n);
}
