import { intAt, onlyKeys } from "../../errors.js";
import { noteWholeSource } from "../../fields.js";
import { compileSort, compileSource, hitOf, sortValuesOf } from "../../hits.js";
import { FIND_LIMITS, overLimit } from "../../limits.js";
import type { Builder } from "../types.js";

export const topHits: Builder = (body, b) => {
  onlyKeys(body, ["size", "from", "sort", "_source", "track_scores"], b.where);
  const size = body.size === undefined ? 3 : intAt(body.size, `${b.where}.size`);
  const from = body.from === undefined ? 0 : intAt(body.from, `${b.where}.from`);
  if (from + size > FIND_LIMITS.innerResultWindow)
    throw overLimit(
      `[${b.where}] [from] + [size] is too large`,
      FIND_LIMITS.innerResultWindow,
      "index.max_inner_result_window",
    );
  const sorter = compileSort(body.sort, b.ctx.fieldTypes);
  const source = compileSource(body._source);
  noteWholeSource();
  const trackScores = body.track_scores === true;
  return (docs) => {
    const sorted = [...docs].sort(sorter ? sorter.compare : (x, y) => y.score - x.score || x.id - y.id);
    const scored = !sorter || sorter.tracksScores || trackScores;
    const page = sorted.slice(from, from + size);
    const sortValues = sorter && !sorter.byScore ? sortValuesOf(sorter, page, docs) : undefined;
    const hits = page.map((d, i) => hitOf(d, scored ? d.score : null, source, sortValues?.[i]));
    let maxScore: number | null = null;
    if (scored) for (const d of docs) maxScore = maxScore === null ? d.score : Math.max(maxScore, d.score);
    return { hits: { total: docs.length, max_score: maxScore, hits } };
  };
};
