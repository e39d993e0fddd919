import { z } from "zod";
import { DEFAULT_RETRY, PermanentFailure, defineAction } from "./action.js";

const ADDRESS = /^[^\s@,]+@[^\s@,]+$/;

const EmailConfig = z.object({
  toAddresses: z.string().min(1),
  subject: z.string(),
  body: z.string(),
});
export type EmailConfig = z.infer<typeof EmailConfig>;

export function addresses(list: string): string[] {
  return list
    .split(",")
    .map((a) => a.trim())
    .filter((a) => a !== "");
}

export const emailAction = defineAction<EmailConfig>({
  type: "EMAIL",
  schema: () =>
    EmailConfig.superRefine((c, ctx) => {
      const bad = addresses(c.toAddresses).find((a) => !a.includes("${") && !ADDRESS.test(a));
      if (bad !== undefined)
        ctx.addIssue({ code: "custom", path: ["toAddresses"], message: `${bad} is not an address` });
    }),
  retry: () => DEFAULT_RETRY,
  create: ({ mailer }) => {
    return async ({ config: c }) => {
      const to = addresses(String(c.toAddresses));
      const bad = to.find((a) => !ADDRESS.test(a));
      if (to.length === 0 || bad !== undefined)
        throw new PermanentFailure(`toAddresses: ${bad ?? "none"} is not an address`);
      await mailer.send({ to, subject: String(c.subject), text: String(c.body) });
    };
  },
});
