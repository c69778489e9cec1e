// ns-3's queue discs driven by a packet trace (tests/ns3_oracle.py compiles this with
// cppyy.cppdef and reads the results). One queue disc, one server: packets arrive at the
// trace's times, the server takes the head of the queue disc whenever it is free and holds
// it for one service time (1 / the rate in force), as BMv2's rate-limited queue does. When
// the server finishes and the queue disc is empty it asks once more (ns-3's devices do the
// same), which is how RED and CoDel learn that the queue went idle.
#include "ns3/codel-queue-disc.h"
#include "ns3/packet.h"
#include "ns3/pie-queue-disc.h"
#include "ns3/red-queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <string>
#include <vector>

namespace p4aqm_ns3
{
using namespace ns3;

// Private members, read with the explicit-instantiation idiom: an explicit instantiation
// may name a private member, and the friend function it defines hands the pointer out.
template <typename Tag, typename Tag::type Member>
struct Rob
{
    friend typename Tag::type get(Tag)
    {
        return Member;
    }
};

#define P4AQM_PRIVATE(Class, Type, name)                                                      \
    struct Class##_##name                                                                      \
    {                                                                                          \
        using type = Type Class::*;                                                            \
        friend type get(Class##_##name);                                                       \
    };                                                                                         \
    template struct Rob<Class##_##name, &Class::name>;

P4AQM_PRIVATE(RedQueueDisc, double, m_qAvg)
P4AQM_PRIVATE(RedQueueDisc, uint32_t, m_count)
P4AQM_PRIVATE(RedQueueDisc, uint32_t, m_old)
P4AQM_PRIVATE(RedQueueDisc, double, m_curMaxP)
P4AQM_PRIVATE(RedQueueDisc, Ptr<UniformRandomVariable>, m_uv)
P4AQM_PRIVATE(CoDelQueueDisc, TracedValue<uint32_t>, m_count)
P4AQM_PRIVATE(CoDelQueueDisc, TracedValue<uint32_t>, m_lastCount)
P4AQM_PRIVATE(CoDelQueueDisc, TracedValue<bool>, m_dropping)
P4AQM_PRIVATE(CoDelQueueDisc, TracedValue<uint32_t>, m_dropNext)
P4AQM_PRIVATE(PieQueueDisc, double, m_dropProb)
P4AQM_PRIVATE(PieQueueDisc, Time, m_qDelay)
P4AQM_PRIVATE(PieQueueDisc, Time, m_burstAllowance)
P4AQM_PRIVATE(PieQueueDisc, PieQueueDisc::BurstStateT, m_burstState)
P4AQM_PRIVATE(PieQueueDisc, Ptr<UniformRandomVariable>, m_uv)

// A trace packet: its number and its ECN codepoint (the low bits of the TOS byte), marked
// as an IPv4 header would be: ECT(0), ECT(1) and CE become CE, Not-ECT cannot be marked.
class TraceItem : public QueueDiscItem
{
  public:
    TraceItem(uint32_t size, uint32_t id, uint8_t ecn)
        : QueueDiscItem(Create<Packet>(size), Address(), 0),
          id(id),
          ecn(ecn)
    {
    }

    void AddHeader() override
    {
    }

    bool Mark() override
    {
        if (ecn == 0)
        {
            return false;
        }
        ecn = 3;
        return true;
    }

    bool GetUint8Value(Uint8Values field, uint8_t& value) const override
    {
        value = ecn;
        return field == IP_DSFIELD;
    }

    uint32_t id;
    uint8_t ecn;
};

// The uniform draws the caller chose, one per packet (the draw of the packet being
// enqueued): RED and PIE then decide with the golden model's random numbers.
class ScriptedUniform : public UniformRandomVariable
{
  public:
    double GetValue() override
    {
        calls++;
        return (*draws)[*current];
    }

    const std::vector<double>* draws = nullptr;
    const uint32_t* current = nullptr;
    uint64_t calls = 0;
};

// What Python hands over: the queue disc's attributes and the trace. Times in ns.
struct Input
{
    std::vector<std::string> names; // ns-3 attribute names, and their values as text
    std::vector<std::string> values;
    std::vector<int64_t> arrivals;
    std::vector<uint32_t> sizes;
    std::vector<uint32_t> ecn;
    std::vector<int64_t> rate_from; // service rate k applies to packets starting service
    std::vector<int64_t> service;   // at or after rate_from[k]: service[k] each
    std::vector<double> draws;      // one per packet; empty: ns-3's stream number `stream`
    int64_t stream = 1;
};

// What happened to each packet. Times are nanoseconds; -1: never (dropped on arrival).
struct Run
{
    std::vector<uint32_t> queued; // packets the queue disc held when it arrived
    std::vector<int64_t> left;    // when it left the queue disc (served, or dropped then)
    std::vector<int32_t> reason;  // index into reasons of its drop or mark; -1: neither
    std::vector<uint32_t> ecn_out;
    std::vector<std::string> reasons;
    uint64_t draws_used = 0;
    // RED, after each arrival: the average, the count, old (0: count restarts), max_p.
    std::vector<double> avg;
    std::vector<uint32_t> count;
    std::vector<uint32_t> old;
    std::vector<double> max_p;
    // CoDel, after each packet that leaves (in order): the packet, count, lastcount,
    // dropping, drop_next (CoDel's clock: nanoseconds >> 10).
    std::vector<uint32_t> codel_id;
    std::vector<uint32_t> codel_count;
    std::vector<uint32_t> codel_lastcount;
    std::vector<uint32_t> codel_dropping;
    std::vector<uint32_t> codel_drop_next;
    // PIE, just after each probability update: when, the probability, the queue delay it
    // used, the burst allowance (ns) and state.
    std::vector<int64_t> pie_at;
    std::vector<double> pie_prob;
    std::vector<int64_t> pie_qdelay;
    std::vector<int64_t> pie_burst;
    std::vector<uint32_t> pie_burst_state;
};

class Driver
{
  public:
    Driver(Ptr<QueueDisc> disc, const Input& in)
        : m_disc(disc),
          m_in(in)
    {
        size_t n = in.arrivals.size();
        run.queued.assign(n, 0);
        run.left.assign(n, -1);
        run.reason.assign(n, -1);
        run.ecn_out.assign(in.ecn.begin(), in.ecn.end());
        m_disc->TraceConnectWithoutContext("DropBeforeEnqueue",
                                           MakeCallback(&Driver::Dropped, this));
        m_disc->TraceConnectWithoutContext("DropAfterDequeue",
                                           MakeCallback(&Driver::DroppedAfterDequeue, this));
        m_disc->TraceConnectWithoutContext("Mark", MakeCallback(&Driver::Dropped, this));
    }

    // The queue disc's uniform stream (RED's and PIE's m_uv) replaced by the input's draws,
    // or without them set to ns-3's stream number `stream` (else the number would depend
    // on the random variables the process made before).
    void Script(Ptr<UniformRandomVariable>& uv)
    {
        if (m_in.draws.empty())
        {
            uv->SetStream(m_in.stream);
            return;
        }
        m_scripted = CreateObject<ScriptedUniform>();
        m_scripted->draws = &m_in.draws;
        m_scripted->current = &m_current;
        uv = m_scripted;
    }

    void Go()
    {
        for (uint32_t i = 0; i < m_in.arrivals.size(); i++)
        {
            Simulator::Schedule(NanoSeconds(m_in.arrivals[i]), &Driver::Arrive, this, i);
        }
        Simulator::Run();
        if (m_scripted)
        {
            run.draws_used = m_scripted->calls;
        }
    }

    std::function<void(uint32_t)> afterArrival;
    std::function<void(uint32_t)> afterService;
    Run run;

  private:
    void Arrive(uint32_t i)
    {
        m_current = i;
        run.queued[i] = m_disc->GetNPackets();
        m_disc->Enqueue(Create<TraceItem>(m_in.sizes[i], i, m_in.ecn[i]));
        if (afterArrival)
        {
            afterArrival(i);
        }
        if (!m_busy)
        {
            Serve();
        }
    }

    void Serve()
    {
        Ptr<QueueDiscItem> item = m_disc->Dequeue();
        m_busy = bool(item);
        if (!item)
        {
            return;
        }
        uint32_t id = DynamicCast<TraceItem>(item)->id;
        run.left[id] = Simulator::Now().GetNanoSeconds();
        if (afterService)
        {
            afterService(id);
        }
        Simulator::Schedule(NanoSeconds(ServiceTime()), &Driver::Serve, this);
    }

    int64_t ServiceTime() const
    {
        int64_t now = Simulator::Now().GetNanoSeconds();
        size_t k = 0;
        while (k + 1 < m_in.rate_from.size() && m_in.rate_from[k + 1] <= now)
        {
            k++;
        }
        return m_in.service[k];
    }

    void Dropped(Ptr<const QueueDiscItem> item, const char* why)
    {
        auto trace = DynamicCast<const TraceItem>(item);
        run.reason[trace->id] = Reason(why);
        run.ecn_out[trace->id] = trace->ecn;
    }

    void DroppedAfterDequeue(Ptr<const QueueDiscItem> item, const char* why)
    {
        Dropped(item, why);
        run.left[DynamicCast<const TraceItem>(item)->id] = Simulator::Now().GetNanoSeconds();
    }

    int32_t Reason(const std::string& why)
    {
        for (size_t k = 0; k < run.reasons.size(); k++)
        {
            if (run.reasons[k] == why)
            {
                return k;
            }
        }
        run.reasons.push_back(why);
        return run.reasons.size() - 1;
    }

    Ptr<QueueDisc> m_disc;
    const Input& m_in;
    Ptr<ScriptedUniform> m_scripted;
    uint32_t m_current = 0;
    bool m_busy = false;
};

// One run in a fresh simulation from time 0: the queue disc made with the input's
// attributes, `setup` (the disc, the driver) to hook what to record, the trace played.
template <typename Disc, typename Setup>
Run
Simulate(const Input& in, Setup setup)
{
    Simulator::Destroy();
    Ptr<Disc> disc = CreateObject<Disc>();
    for (size_t k = 0; k < in.names.size(); k++)
    {
        disc->SetAttribute(in.names[k], StringValue(in.values[k]));
    }
    disc->Initialize();
    Driver driver(disc, in);
    setup(*PeekPointer(disc), driver);
    driver.Go();
    Simulator::Destroy();
    return driver.run;
}

Run
RunRed(const Input& in)
{
    return Simulate<RedQueueDisc>(in, [](RedQueueDisc& red, Driver& driver) {
        driver.Script(red.*get(RedQueueDisc_m_uv()));
        driver.afterArrival = [&red, &driver](uint32_t) {
            driver.run.avg.push_back(red.*get(RedQueueDisc_m_qAvg()));
            driver.run.count.push_back(red.*get(RedQueueDisc_m_count()));
            driver.run.old.push_back(red.*get(RedQueueDisc_m_old()));
            driver.run.max_p.push_back(red.*get(RedQueueDisc_m_curMaxP()));
        };
    });
}

Run
RunCoDel(const Input& in)
{
    return Simulate<CoDelQueueDisc>(in, [](CoDelQueueDisc& codel, Driver& driver) {
        driver.afterService = [&codel, &driver](uint32_t id) {
            driver.run.codel_id.push_back(id);
            driver.run.codel_count.push_back((codel.*get(CoDelQueueDisc_m_count())).Get());
            driver.run.codel_lastcount.push_back(
                (codel.*get(CoDelQueueDisc_m_lastCount())).Get());
            driver.run.codel_dropping.push_back((codel.*get(CoDelQueueDisc_m_dropping())).Get());
            driver.run.codel_drop_next.push_back(
                (codel.*get(CoDelQueueDisc_m_dropNext())).Get());
        };
    });
}

// PIE updates its probability every Tupdate from time 0 (the constructor schedules the
// first update before the attributes are set, so Supdate is always 0 here); the state is
// sampled 1 ns after each update, before any trace event (the trace is on whole us), until
// until_ns, where the run stops (PIE's updates never end).
Run
RunPie(const Input& in, int64_t tupdate_ns, int64_t until_ns)
{
    return Simulate<PieQueueDisc>(in, [=](PieQueueDisc& pie, Driver& driver) {
        driver.Script(pie.*get(PieQueueDisc_m_uv()));
        for (int64_t t = 0; t <= until_ns; t += tupdate_ns)
        {
            Simulator::Schedule(NanoSeconds(t + 1), [&pie, &driver]() {
                driver.run.pie_at.push_back(Simulator::Now().GetNanoSeconds() - 1);
                driver.run.pie_prob.push_back(pie.*get(PieQueueDisc_m_dropProb()));
                driver.run.pie_qdelay.push_back(
                    (pie.*get(PieQueueDisc_m_qDelay())).GetNanoSeconds());
                driver.run.pie_burst.push_back(
                    (pie.*get(PieQueueDisc_m_burstAllowance())).GetNanoSeconds());
                driver.run.pie_burst_state.push_back(pie.*get(PieQueueDisc_m_burstState()));
            });
        }
        Simulator::Stop(NanoSeconds(until_ns + 1));
    });
}

} // namespace p4aqm_ns3
