export { topicProducer, type TopicProducer, type TopicProducerOptions } from "./producer.js";
