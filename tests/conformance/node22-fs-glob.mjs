// Lets the conformance suite run on Node 20.
//
// @modelcontextprotocol/conformance is an ES module that does `import { globSync } from "fs"`,
// which exists only from Node 22 on; on Node 20 the import fails at link time, before any of
// its code runs. A `--require` preload that sets `fs.globSync` does not help: the named exports
// of a built-in ES module are fixed when `fs` is first loaded. So this file, given to node as
// `--import ./node22-fs-glob.mjs`, registers a resolve hook (fs-hooks.mjs) that hands importers
// of `fs` / `node:fs` a module re-exporting all of `node:fs` plus a `globSync`
// (fs-with-glob.mjs). On a Node that has `fs.globSync` it does nothing.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") {
  register("./fs-hooks.mjs", import.meta.url);
}
