import { compileQuery, newPushdown } from "../../query.js";
import type { Builder } from "../types.js";
import { runSubs } from "./holder.js";

export const filter: Builder = (body, b) => {
  const m = compileQuery(body, { now: b.ctx.now, pushdown: newPushdown() }, false, true);
  return (docs) => {
    const inside = docs.filter((d) => m.test(d));
    return runSubs(b.subs, inside, { doc_count: inside.length });
  };
};
