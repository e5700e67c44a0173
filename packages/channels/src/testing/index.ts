/** Loopback fakes of the vendor APIs behind `chat_a` and `chat_b`, for tests of this and other packages. */
export {
  createFakeWhatsApp,
  statusWebhookPayload,
  textWebhookPayload,
  type FakeWhatsApp,
  type FakeWhatsAppOptions,
  type FakeWhatsAppSend,
  type TextWebhookInput,
} from './fake-whatsapp.js';
export {
  createFakeTelegram,
  type FakeTelegram,
  type FakeTelegramOptions,
  type FakeTelegramPoll,
  type FakeTelegramRequest,
  type FakeTelegramSend,
} from './fake-telegram.js';
