// `node:fs` plus the `globSync` of Node 22 (see node22-fs-glob.mjs). The fallback knows the
// patterns the conformance suite uses (`**/NAME` and plain relative paths, with `cwd`) and
// refuses any other pattern loudly rather than answer wrongly. The server scenarios do not
// call it; its `tier-check` command does.
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

function walk(dir, out) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  if (typeof pattern !== "string") {
    throw new Error("globSync shim (Node 20): only a single string pattern is supported");
  }
  if (!/[*?[\]{}]/.test(pattern)) {
    return fs.existsSync(path.resolve(cwd, pattern)) ? [pattern] : [];
  }
  const any = /^\*\*\/([^*?[\]{}/]+)$/.exec(pattern);
  if (!any) {
    throw new Error(`globSync shim (Node 20): pattern ${pattern} is not supported`);
  }
  if (!fs.existsSync(cwd)) return [];
  return walk(cwd, [])
    .filter((file) => path.basename(file) === any[1])
    .map((file) => path.relative(cwd, file));
}
