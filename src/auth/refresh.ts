import type { Db } from "../store/index.js";

/** A refresh token that was redeemed: whose it is and the family its successor joins. */
export interface RefreshGrant {
  userName: string;
  family: string;
}

/**
 * Refresh tokens rotate: each is good for one exchange. Every token issued
 * is a row (its `jti`), in a family that starts at login; an exchange marks
 * it used and the next token joins the same family. A token presented again
 * after it was used means it leaked (or a client raced itself): the whole
 * family is revoked, so the newest token of that login stops working too.
 * Rows live in SQLite, so this holds across restarts and across processes on
 * one data dir (the exchange is one IMMEDIATE transaction). Expired rows are
 * pruned as tokens are issued, so the table holds the live sessions only.
 */
export class RefreshTokens {
  private readonly insert;
  private readonly prune;
  private readonly find;
  private readonly markUsed;
  private readonly revokeFamily;
  private readonly redeemTx;

  constructor(
    db: Db,
    private readonly clock: () => number,
  ) {
    this.insert = db.prepare<[string, string, string, number]>(
      "INSERT INTO refresh_tokens (jti, family, user_name, expires_at) VALUES (?, ?, ?, ?)",
    );
    this.prune = db.prepare<[number]>("DELETE FROM refresh_tokens WHERE expires_at <= ?");
    this.find = db.prepare<
      [string],
      { family: string; user_name: string; expires_at: number; used_at: number | null; revoked_at: number | null }
    >("SELECT family, user_name, expires_at, used_at, revoked_at FROM refresh_tokens WHERE jti = ?");
    this.markUsed = db.prepare<[number, string]>("UPDATE refresh_tokens SET used_at = ? WHERE jti = ?");
    this.revokeFamily = db.prepare<[number, string]>(
      "UPDATE refresh_tokens SET revoked_at = ? WHERE family = ? AND revoked_at IS NULL",
    );
    this.redeemTx = db.transaction((jti: string, userName: string): RefreshGrant | undefined => {
      const now = this.clock();
      const row = this.find.get(jti);
      if (!row || row.user_name !== userName || row.revoked_at !== null || row.expires_at <= now) return undefined;
      if (row.used_at !== null) {
        this.revokeFamily.run(now, row.family);
        return undefined;
      }
      this.markUsed.run(now, jti);
      return { userName: row.user_name, family: row.family };
    });
  }

  /** Records a token issued to `userName` in `family`, valid until `expiresAt` (epoch ms). */
  issued(jti: string, family: string, userName: string, expiresAt: number): void {
    this.prune.run(this.clock());
    this.insert.run(jti, family, userName, expiresAt);
  }

  /** Uses the token up: its grant, or undefined when it is unknown, expired, revoked or used (which revokes its family). */
  redeem(jti: string, userName: string): RefreshGrant | undefined {
    return this.redeemTx.immediate(jti, userName);
  }
}
