import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/** A call frame of V8's sampling heap profile. */
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/**
 * Where a stretch of this process's work allocates its heap: V8's sampling heap profiler with the
 * objects the garbage collector has since freed kept in (a plain heap profile keeps only what is
 * still alive, which on the dispatch path is almost nothing: its garbage is the cost). The
 * profile is written to `file` for Chrome DevTools (Memory → Load), and summed by call site here.
 */
export class AllocationProfile {
  private constructor(
    private readonly session: Session,
    private readonly file: string,
  ) {}

  static async start(file: string): Promise<AllocationProfile> {
    const session = new Session();
    session.connect();
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return new AllocationProfile(session, file);
  }

  /** Stops, writes the profile, and returns the bytes allocated and the call sites allocating most themselves. */
  async stop(top = 15): Promise<{ bytes: number; sites: { site: string; bytes: number }[] }> {
    const { profile } = await this.session.post('HeapProfiler.stopSampling');
    this.session.disconnect();
    writeFileSync(this.file, JSON.stringify(profile));
    const bySite = new Map<string, number>();
    let bytes = 0;
    const walk = (node: ProfileNode) => {
      const { functionName, url, lineNumber } = node.callFrame;
      const site = `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      bytes += node.selfSize;
      node.children.forEach(walk);
    };
    walk(profile.head);
    const sites = [...bySite]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([site, siteBytes]) => ({ site, bytes: siteBytes }));
    return { bytes, sites };
  }
}

/** A package's file from its name on (`amqplib/lib/codec.js`), the project's from its top folder (`lib/…`). */
function shortUrl(url: string): string {
  const inPackage = url.lastIndexOf('node_modules/');
  if (inPackage >= 0) return url.slice(inPackage + 'node_modules/'.length);
  return url.replace(/^.*?\/(lib|bench|test)\//, '$1/');
}
