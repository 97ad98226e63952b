import { readFileSync } from 'node:fs';

/** Objects of one kind in a V8 heap snapshot: how many, and their own (shallow) size in bytes. */
export interface KindTotal {
  count: number;
  selfSize: number;
}

/** One kind's change between two snapshots of a process, and what holds its new objects. */
export interface KindGrowth {
  kind: string;
  count: number;
  selfSize: number;
  countChange: number;
  selfSizeChange: number;
  /** Objects of this kind in the later snapshot that the earlier one did not have. */
  newObjects: number;
  /** The commonest chains of retainers of those new objects, nearest first, with how many objects each holds. */
  retainers: { chain: string; objects: number }[];
}

/** The parts of a `.heapsnapshot` file read here. */
interface HeapSnapshotFile {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/**
 * A `.heapsnapshot` file (`v8.writeHeapSnapshot`), read whole. Objects are grouped into kinds about
 * as Chrome DevTools' Summary view groups them: objects by constructor name, closures by function
 * name (`name()`), the rest by V8's kind ((string), (array), (compiled code), (system)…).
 */
export class HeapSnapshot {
  private readonly nodeWidth: number;
  private readonly edgeWidth: number;
  private readonly field: Record<'type' | 'name' | 'id' | 'selfSize' | 'edgeCount' | 'edgeType' | 'edgeName' | 'edgeTo', number>;

  private constructor(private readonly file: HeapSnapshotFile) {
    const { node_fields: nodeFields, edge_fields: edgeFields } = file.snapshot.meta;
    this.nodeWidth = nodeFields.length;
    this.edgeWidth = edgeFields.length;
    this.field = {
      type: nodeFields.indexOf('type'),
      name: nodeFields.indexOf('name'),
      id: nodeFields.indexOf('id'),
      selfSize: nodeFields.indexOf('self_size'),
      edgeCount: nodeFields.indexOf('edge_count'),
      edgeType: edgeFields.indexOf('type'),
      edgeName: edgeFields.indexOf('name_or_index'),
      edgeTo: edgeFields.indexOf('to_node'),
    };
  }

  static read(path: string): HeapSnapshot {
    return new HeapSnapshot(JSON.parse(readFileSync(path, 'utf8')) as HeapSnapshotFile);
  }

  get nodeCount(): number {
    return this.file.nodes.length / this.nodeWidth;
  }

  /** V8's ids of the objects: the same object keeps its id from one snapshot of a process to the next. */
  ids(): Set<number> {
    const ids = new Set<number>();
    for (let node = 0; node < this.nodeCount; node++) ids.add(this.file.nodes[node * this.nodeWidth + this.field.id]);
    return ids;
  }

  totals(): Map<string, KindTotal> {
    const totals = new Map<string, KindTotal>();
    for (let node = 0; node < this.nodeCount; node++) {
      const kind = this.kindOf(node);
      if (kind === undefined) continue;
      const total = totals.get(kind) ?? { count: 0, selfSize: 0 };
      total.count++;
      total.selfSize += this.file.nodes[node * this.nodeWidth + this.field.selfSize];
      totals.set(kind, total);
    }
    return totals;
  }

  /**
   * The kinds whose own size grew most since a snapshot whose totals and ids are `before`, largest
   * growth first; for each, the objects not in `before` and the commonest chains of `depth`
   * retainers holding them (each object's first retainer that is not a weak reference).
   */
  growthSince(before: { totals: Map<string, KindTotal>; ids: Set<number> }, top: number, depth = 4): KindGrowth[] {
    const after = this.totals();
    const growth = [...new Set([...before.totals.keys(), ...after.keys()])]
      .map((kind) => {
        const was = before.totals.get(kind) ?? { count: 0, selfSize: 0 };
        const now = after.get(kind) ?? { count: 0, selfSize: 0 };
        return { kind, count: now.count, selfSize: now.selfSize, countChange: now.count - was.count, selfSizeChange: now.selfSize - was.selfSize };
      })
      .sort((a, b) => b.selfSizeChange - a.selfSizeChange)
      .slice(0, top);
    const wanted = new Map(growth.map((g) => [g.kind, { newObjects: 0, chains: new Map<string, number>() }]));
    const retainer = this.firstRetainers();
    for (let node = 0; node < this.nodeCount; node++) {
      const kind = this.kindOf(node);
      const found = kind === undefined ? undefined : wanted.get(kind);
      if (!found || before.ids.has(this.file.nodes[node * this.nodeWidth + this.field.id])) continue;
      found.newObjects++;
      const links: string[] = [];
      for (let at = node, step = 0; step < depth && retainer.node[at] !== NONE; step++) {
        links.push(`${this.edgeLabel(retainer.edge[at])} of ${this.kindOf(retainer.node[at]) ?? '(root)'}`);
        at = retainer.node[at];
      }
      const chain = links.join(' ← ') || '(none)';
      found.chains.set(chain, (found.chains.get(chain) ?? 0) + 1);
    }
    return growth.map((g) => {
      const { newObjects, chains } = wanted.get(g.kind)!;
      const retainers = [...chains]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([chain, objects]) => ({ chain, objects }));
      return { ...g, newObjects, retainers };
    });
  }

  /** For each node, the first node holding it by a reference that is not weak, and that reference. */
  private firstRetainers(): { node: Uint32Array; edge: Uint32Array } {
    const { nodes, edges } = this.file;
    const node = new Uint32Array(this.nodeCount).fill(NONE);
    const edge = new Uint32Array(this.nodeCount);
    const weak = this.file.snapshot.meta.edge_types[0].indexOf('weak');
    let at = 0;
    for (let from = 0; from < this.nodeCount; from++) {
      const end = at + nodes[from * this.nodeWidth + this.field.edgeCount] * this.edgeWidth;
      for (; at < end; at += this.edgeWidth) {
        const to = edges[at + this.field.edgeTo] / this.nodeWidth;
        if (edges[at + this.field.edgeType] === weak || node[to] !== NONE || to === from) continue;
        node[to] = from;
        edge[to] = at;
      }
    }
    return { node, edge };
  }

  private edgeLabel(edge: number): string {
    const type = this.file.snapshot.meta.edge_types[0][this.file.edges[edge + this.field.edgeType]];
    const nameOrIndex = this.file.edges[edge + this.field.edgeName];
    // Indexes left out, so that the chains of the objects of one collection count as one.
    switch (type) {
      case 'element':
        return '[i]';
      case 'hidden':
        return '(hidden)';
      case 'context':
        return `variable ${this.file.strings[nameOrIndex]}`;
      default:
        return /^\d+$/.test(this.file.strings[nameOrIndex]) ? '[i]' : `.${this.file.strings[nameOrIndex]}`;
    }
  }

  /** The node's kind; undefined for the snapshot's synthetic roots. */
  private kindOf(node: number): string | undefined {
    const type = this.file.snapshot.meta.node_types[0][this.file.nodes[node * this.nodeWidth + this.field.type]];
    const name = this.file.strings[this.file.nodes[node * this.nodeWidth + this.field.name]];
    switch (type) {
      case 'synthetic':
        return undefined;
      case 'object':
      case 'native':
        return name;
      case 'closure':
        return `${name || '(anonymous)'}()`;
      case 'string':
      case 'concatenated string':
      case 'sliced string':
        return '(string)';
      case 'code':
        return '(compiled code)';
      case 'hidden':
      case 'object shape':
        return '(system)';
      default:
        return `(${type})`;
    }
  }
}

const NONE = 0xffffffff;
