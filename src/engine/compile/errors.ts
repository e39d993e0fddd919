import { ApiError } from "../../errors/index.js";

/**
 * A rule that cannot be compiled. It is an `INVALID_ARGUMENTS` ApiError so
 * that rule CREATE/UPDATE, which compile before storing, answer it as is;
 * `property` names the expression item (`expression[1].value`).
 */
export class RuleCompileError extends ApiError {
  constructor(
    property: string,
    /** What is wrong, without the property: action templates put it under their own key. */
    readonly reason: string,
  ) {
    super("INVALID_ARGUMENTS", `Property ${property} is invalid: ${reason}`, property);
  }
}
