// Header prediction of the request/response case (tcp_input.cpp, predict): in-order data
// that acknowledges everything in flight (a request acknowledging the last response) is
// taken by header prediction, with its ACK processed in full before the data is offered;
// a segment that acknowledges only part of what is in flight takes the full path.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/support/tcp_pair.hpp"

namespace ws::test {
namespace {

constexpr uint16_t kPort = 7;
constexpr size_t kMessage = 64;

// An echo on b and its client on a: every request is answered with its own bytes.
struct Echo {
  Pair p;
  tcp::Connection* client = nullptr;
  tcp::Connection* server = nullptr;
  size_t answered = 0;         // response bytes the client received
  size_t unacked_at_data = 0;  // the server's send queue when the last request arrived
  std::vector<uint8_t> msg;

  explicit Echo(size_t message = kMessage) : msg(message, 0x5a) {
    tcp::ListenCallbacks l;
    l.on_accept = [this](tcp::Connection& c) {
      server = &c;
      tcp::ConnCallbacks cb;
      cb.on_data = [this](tcp::Connection& conn, std::span<const uint8_t> d) {
        unacked_at_data = conn.send_queued();
        return conn.send(d);
      };
      c.set_callbacks(std::move(cb));
      return true;
    };
    EXPECT_TRUE(p.b.listen(kPort, std::move(l)));
    tcp::ConnCallbacks cb;
    cb.on_data = [this](tcp::Connection&, std::span<const uint8_t> d) {
      answered += d.size();
      return d.size();
    };
    client = p.a.connect({kAddrB, kPort}, std::move(cb), 0, p.now);
    EXPECT_NE(client, nullptr);
    p.settle();
  }
  // One request and its response; the client's delayed ACK rides on the next request.
  void round_trip() {
    ASSERT_EQ(client->send(msg), msg.size());
    p.settle();
  }
};

TEST(HeaderPrediction, RequestAcknowledgingTheResponse) {
  Echo e;
  ASSERT_NE(e.server, nullptr);
  // Past quick-ACK (the first segments are ACKed at once, each alone).
  for (uint32_t i = 0; i < 2 * tcp::Tcb::kQuickAcks; ++i) e.round_trip();
  for (int i = 0; i < 10; ++i) {
    // The last response is in flight, unacknowledged: the request acknowledges it.
    ASSERT_EQ(e.server->send_queued(), kMessage);
    const uint64_t predicted = e.p.b.ctr().rx_predicted;
    const uint64_t direct = e.p.b.ctr().rx_bytes_direct;
    e.round_trip();
    EXPECT_EQ(e.p.b.ctr().rx_predicted, predicted + 1);
    EXPECT_EQ(e.p.b.ctr().rx_bytes_direct, direct + kMessage);
    // The ACK was processed before the data was offered: the response's bytes were freed.
    EXPECT_EQ(e.unacked_at_data, 0u);
  }
  EXPECT_EQ(e.answered, (2 * tcp::Tcb::kQuickAcks + 10) * kMessage);
}

// Responses of 600 bytes, each sent from on_data as the request arrives, and each next
// request sent from on_data as the response completes (an HTTP client's keep-alive loop):
// a side's receive window, its right edge held until it can move by an MSS (SWS
// avoidance), is smaller by the segment it is taking, so the segments carry windows that
// differ from one to the next. Acknowledging everything in flight, the responses are still
// predicted at the client (process_ack takes the new window as the full path does).
TEST(HeaderPrediction, ResponsesWithAMovingWindow) {
  constexpr size_t kLarge = 600;
  constexpr int kRounds = 10;
  Echo e(kLarge);
  ASSERT_NE(e.server, nullptr);
  for (uint32_t i = 0; i < 2 * tcp::Tcb::kQuickAcks; ++i) e.round_trip();
  int left = kRounds;
  size_t got = 0;
  tcp::ConnCallbacks cb;
  cb.on_data = [&](tcp::Connection& c, std::span<const uint8_t> d) {
    got += d.size();
    if (got % kLarge == 0 && left > 0) {
      --left;
      EXPECT_EQ(c.send(e.msg), e.msg.size());
    }
    return d.size();
  };
  e.client->set_callbacks(std::move(cb));
  const uint64_t predicted = e.p.a.ctr().rx_predicted;
  e.round_trip();  // the first request; the others follow from on_data
  EXPECT_EQ(got, (kRounds + 1) * kLarge);
  EXPECT_EQ(e.p.a.ctr().rx_predicted, predicted + kRounds + 1);
}

// The first response after the handshake acknowledges the request and carries the
// server's scaled window, not the SYN,ACK's unscaled one: predicted all the same, the new
// window taken by the ACK's processing.
TEST(HeaderPrediction, ResponseWithANewWindow) {
  Echo e;
  ASSERT_NE(e.server, nullptr);
  const uint32_t syn_window = e.client->info().snd_wnd;
  const uint64_t predicted = e.p.a.ctr().rx_predicted;
  e.round_trip();
  EXPECT_EQ(e.answered, kMessage);
  EXPECT_NE(e.client->info().snd_wnd, syn_window);
  EXPECT_EQ(e.p.a.ctr().rx_predicted, predicted + 1);
  // The window is the server's, scaled as its SYN,ACK announced.
  const tcp::ConnInfo srv = e.server->info();
  EXPECT_EQ(e.client->info().snd_wnd, srv.rcv_wnd);
}

// The close of an exchange: each FIN, in order and acknowledging everything in flight, is
// predicted (ESTABLISHED to CLOSE-WAIT, FIN-WAIT-2 to TIME-WAIT), with the states the full
// path gives.
TEST(HeaderPrediction, FinAcknowledgingEverything) {
  Echo e;
  ASSERT_NE(e.server, nullptr);
  e.round_trip();
  const uint64_t at_server = e.p.b.ctr().rx_predicted;
  e.client->close();
  e.p.settle();
  EXPECT_EQ(e.p.b.ctr().rx_predicted, at_server + 1);
  EXPECT_EQ(e.server->state(), tcp::TcpState::kCloseWait);
  EXPECT_EQ(e.client->state(), tcp::TcpState::kFinWait2);
  const uint64_t at_client = e.p.a.ctr().rx_predicted;
  e.server->close();
  e.p.settle();
  EXPECT_EQ(e.p.a.ctr().rx_predicted, at_client + 1);
  // The client's Tcb is gone (on_closed told its application so): TIME_WAIT is a record.
  EXPECT_EQ(e.p.a.count_in(tcp::TcpState::kTimeWait), 1u);
  EXPECT_EQ(e.p.a.table_sizes().time_wait, 1u);
  EXPECT_EQ(e.p.b.count_in(tcp::TcpState::kLastAck), 0u);
  EXPECT_EQ(e.p.b.connection_count(), 0u);
}

// Two responses in flight and a request that acknowledges only the first: not predicted
// (the full path handles a partial ACK: RACK, the retransmission timer's restart).
TEST(HeaderPrediction, PartialAcknowledgmentTakesTheFullPath) {
  Echo e;
  ASSERT_NE(e.server, nullptr);
  for (uint32_t i = 0; i < 2 * tcp::Tcb::kQuickAcks; ++i) e.round_trip();
  // A second response that the client has not seen when it sends its next request.
  ASSERT_EQ(e.server->send(e.msg), e.msg.size());
  std::vector<WireSegment*> held(e.p.to_a.begin(), e.p.to_a.end());
  e.p.to_a.clear();
  ASSERT_EQ(held.size(), 1u);
  const uint64_t predicted = e.p.b.ctr().rx_predicted;
  ASSERT_EQ(e.client->send(e.msg), e.msg.size());
  // The request reaches b, acknowledging the first response but not the second.
  while (!e.p.to_b.empty()) {
    WireSegment* s = e.p.to_b.front();
    e.p.to_b.pop_front();
    e.p.b.input(s->src, s->dst, s->bytes, true, e.p.now);
    e.p.wa.recycle(s);
  }
  EXPECT_EQ(e.p.b.ctr().rx_predicted, predicted);
  EXPECT_EQ(e.unacked_at_data, kMessage);  // the second response is still in flight
  for (WireSegment* s : held) e.p.to_a.push_back(s);
  e.p.settle();
}

}  // namespace
}  // namespace ws::test
