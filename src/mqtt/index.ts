export {
  DeviceBridge,
  type DeviceBridgeOptions,
  type DeviceJobsEndpoint,
  type BridgeMessage,
  type ObservationHandler,
} from "./bridge.js";
