export {
  UrlSigner,
  signingKey,
  storagePath,
  SIGNED_URL_SECONDS,
  PARAM,
  type SignRequest,
  type SignedRequest,
  type Verdict,
  type SignerOptions,
} from "./signer.js";
