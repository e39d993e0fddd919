export { topicProducer, type TopicProducer, type TopicProducerOptions } from "./producer.js";
export { ensureTopics, retryWithBackoff, DEFAULT_TOPIC_LAYOUT, type TopicLayout, type RetryOptions } from "./topics.js";
export { observationsProducer, type ObservationsProducer } from "./observations.js";
