// Module resolution hook (see node22-fs-glob.mjs): `fs` and `node:fs` resolve to
// fs-with-glob.mjs for every importer but that module itself.
const shim = new URL("./fs-with-glob.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
