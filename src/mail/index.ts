import nodemailer, { type Transporter } from "nodemailer";
import type { Logger } from "../observability/index.js";

export interface MailMessage {
  to: string | string[];
  subject: string;
  text: string;
}

/** E-mail out of dms: rule EMAIL actions and export notifications. */
export interface Mailer {
  /** Resolves once the SMTP server accepted the message; rejects on failure so callers can retry. */
  send(message: MailMessage): Promise<void>;
}

/**
 * nodemailer over `SMTP_URL`; without it, messages are recorded in the log and
 * not sent, and the log says so.
 */
export function createMailer(smtpUrl: string | undefined, from: string, logger: Logger): Mailer {
  if (!smtpUrl) {
    return {
      send: async (m) => {
        logger.warn({ to: m.to, subject: m.subject }, "SMTP_URL is not set: e-mail recorded, not sent");
      },
    };
  }
  const transport: Transporter = nodemailer.createTransport(smtpUrl);
  return {
    send: async (m) => {
      await transport.sendMail({ from, to: m.to, subject: m.subject, text: m.text });
    },
  };
}
