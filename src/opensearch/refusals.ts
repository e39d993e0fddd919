import { MAX_DEAD_LETTER_PAYLOAD, type DeadLetter, type DeadLetterReason } from "../engine/index.js";
import type { RefusedItem } from "./bulk.js";

/** OpenSearch's refusals of a document's values: a value its index maps otherwise (an object where a number was). */
const TYPE_REFUSALS = new Set(["mapper_parsing_exception", "document_parsing_exception", "illegal_argument_exception"]);

/** The dead letter's reason and message for a document OpenSearch refused. */
export function refusalReason(refused: RefusedItem): { reason: DeadLetterReason; message: string } {
  return {
    reason: TYPE_REFUSALS.has(refused.type) ? "wrong-type" : "invalid-observation",
    message: `OpenSearch refused it: ${refused.type}: ${refused.reason}`,
  };
}

/** The dead letter of a document OpenSearch refused, for an observation no stream replays. */
export function refusedLetter(
  refused: RefusedItem,
  document: { thingName: string; domain: string },
  source: string,
  now: number,
): DeadLetter {
  const { reason, message } = refusalReason(refused);
  return {
    source,
    thingName: document.thingName,
    domain: document.domain,
    reason,
    message,
    payload: refused.item.source.slice(0, MAX_DEAD_LETTER_PAYLOAD),
    createdAt: now,
  };
}
