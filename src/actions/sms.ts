import twilio from "twilio";
import { z } from "zod";
import type { Config } from "../config/index.js";
import { DEFAULT_RETRY, Deferred, PermanentFailure, defineAction } from "./action.js";
import type { Timers } from "./timers.js";

/** E.164 without the plus: a country code and up to 15 digits in all. */
const MSISDN = /^[1-9]\d{6,14}$/;
export const SMS_MAX_LENGTH = 160;

const SmsConfig = z.object({
  message: z.string(),
  addressList: z.array(z.string()).min(1),
});
export type SmsConfig = z.infer<typeof SmsConfig>;

/** Cuts at 160 characters (code points, so a surrogate pair is never split). */
export function truncate(message: string): string {
  const chars = Array.from(message);
  return chars.length <= SMS_MAX_LENGTH ? message : chars.slice(0, SMS_MAX_LENGTH).join("");
}

/**
 * Sends at most `perSecond` messages a second: slots are handed out in
 * order; an action that finds no free slot is deferred to the next one
 * instead of holding a worker.
 */
export class SendLimiter {
  private next = 0;
  private readonly spacing: number;

  constructor(
    perSecond: number,
    private readonly timers: Timers,
  ) {
    this.spacing = 1000 / perSecond;
  }

  /** Times at which `n` messages may go, or a Deferred when the first slot is not yet free. */
  reserve(n: number): number[] {
    const now = this.timers.now();
    if (this.next > now) throw new Deferred(this.next);
    const slots = Array.from({ length: n }, (_, i) => now + i * this.spacing);
    this.next = now + n * this.spacing;
    return slots;
  }
}

interface SmsSender {
  send(to: string, body: string): Promise<void>;
}

/** The twilio client, pointed at `TWILIO_API_URL` when set (tests use a local receiver). */
function twilioSender(config: Config): SmsSender | undefined {
  const { TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: token, TWILIO_FROM: from, TWILIO_API_URL: base } = config;
  if (!sid || !token || !from) return undefined;
  const httpClient = base ? redirectingClient(base) : undefined;
  const client = twilio(sid, token, { ...(httpClient ? { httpClient } : {}), timeout: 10_000, autoRetry: false });
  return {
    send: async (to, body) => {
      await client.messages.create({ to, from, body });
    },
  };
}

function redirectingClient(base: string): twilio.RequestClient {
  const target = new URL(base);
  const client = new twilio.RequestClient({ timeout: 10_000 });
  const request = client.request.bind(client);
  client.request = (opts) => {
    const uri = new URL(opts.uri);
    uri.protocol = target.protocol;
    uri.host = target.host;
    uri.pathname = `${target.pathname.replace(/\/$/, "")}${uri.pathname}`;
    return request({ ...opts, uri: uri.href });
  };
  return client;
}

export const smsAction = defineAction<SmsConfig>({
  type: "SMS",
  schema: () =>
    SmsConfig.superRefine((c, ctx) => {
      c.addressList.forEach((n, i) => {
        if (!n.includes("${") && !MSISDN.test(n)) {
          ctx.addIssue({
            code: "custom",
            path: ["addressList", i],
            message: `${n} is not an E.164 number without the plus`,
          });
        }
      });
    }),
  retry: () => DEFAULT_RETRY,
  create: ({ config, timers, logger }) => {
    const sender = twilioSender(config);
    const limiter = new SendLimiter(config.DMS_SMS_PER_SECOND, timers);
    return async ({ config: c }) => {
      const body = truncate(String(c.message));
      const numbers = c.addressList.map(String);
      const bad = numbers.find((n) => !MSISDN.test(n));
      if (bad !== undefined) throw new PermanentFailure(`addressList: ${bad} is not an E.164 number without the plus`);
      if (!sender) {
        logger.warn({ to: numbers }, "TWILIO_* is not set: SMS recorded, not sent");
        return;
      }
      const slots = limiter.reserve(numbers.length);
      for (const [i, msisdn] of numbers.entries()) {
        await waitUntil(timers, slots[i]!);
        await sender.send(`+${msisdn}`, body);
      }
    };
  },
});

function waitUntil(timers: Timers, at: number): Promise<void> {
  const ms = at - timers.now();
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => timers.setTimeout(resolve, ms));
}
