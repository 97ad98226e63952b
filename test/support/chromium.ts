import { existsSync } from 'node:fs';

/** Where Debian's package (and CI's install, see .ci/run) puts Chromium; CHROMIUM_PATH overrides. */
const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The Chromium executable browser tests drive, or undefined when this machine has none. */
export const CHROMIUM_PATH: string | undefined = CANDIDATES.find((path): path is string => !!path && existsSync(path));

/** Flags for a headless Chromium in a container: no sandbox (no user namespaces), nothing fetched from the network. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
