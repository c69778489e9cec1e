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
    Driver(Ptr<QueueDisc> disc,
           const std::vector<int64_t>& arrivals,
           const std::vector<uint32_t>& sizes,
           const std::vector<uint32_t>& ecn,
           const std::vector<int64_t>& rate_from,
           const std::vector<int64_t>& service)
        : m_disc(disc),
          m_arrivals(arrivals),
          m_sizes(sizes),
          m_ecn(ecn),
          m_rateFrom(rate_from),
          m_service(service)
    {
        size_t n = arrivals.size();
        run.queued.assign(n, 0);
        run.left.assign(n, -1);
        run.reason.assign(n, -1);
        run.ecn_out.assign(ecn.begin(), ecn.end());
        m_disc->TraceConnectWithoutContext("DropBeforeEnqueue",
                                           MakeCallback(&Driver::Dropped, this));
        m_disc->TraceConnectWithoutContext("DropAfterDequeue",
                                           MakeCallback(&Driver::DroppedAfterDequeue, this));
        m_disc->TraceConnectWithoutContext("Mark", MakeCallback(&Driver::Dropped, this));
    }

    // Replaces the queue disc's uniform stream (RED's and PIE's m_uv) by the caller's draws,
    // or (no draws) gives it ns-3's stream number `stream` (else the number depends on the
    // random variables the process made before).
    void Script(Ptr<UniformRandomVariable>& uv, const std::vector<double>& draws, int64_t stream)
    {
        if (draws.empty())
        {
            uv->SetStream(stream);
            return;
        }
        m_draws = draws;
        m_scripted = CreateObject<ScriptedUniform>();
        m_scripted->draws = &m_draws;
        m_scripted->current = &m_current;
        uv = m_scripted;
    }

    void Go()
    {
        for (uint32_t i = 0; i < m_arrivals.size(); i++)
        {
            Simulator::Schedule(NanoSeconds(m_arrivals[i]), &Driver::Arrive, this, i);
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
        m_disc->Enqueue(Create<TraceItem>(m_sizes[i], i, m_ecn[i]));
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
        while (k + 1 < m_rateFrom.size() && m_rateFrom[k + 1] <= now)
        {
            k++;
        }
        return m_service[k];
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
    std::vector<int64_t> m_arrivals;
    std::vector<uint32_t> m_sizes;
    std::vector<uint32_t> m_ecn;
    std::vector<int64_t> m_rateFrom;
    std::vector<int64_t> m_service;
    std::vector<double> m_draws;
    Ptr<ScriptedUniform> m_scripted;
    uint32_t m_current = 0;
    bool m_busy = false;
};

// Each run starts a fresh simulation at time 0 and destroys it at the end.
template <typename Disc>
Ptr<Disc>
Make(const std::vector<std::string>& names, const std::vector<std::string>& values)
{
    Simulator::Destroy();
    Ptr<Disc> disc = CreateObject<Disc>();
    for (size_t k = 0; k < names.size(); k++)
    {
        disc->SetAttribute(names[k], StringValue(values[k]));
    }
    disc->Initialize();
    return disc;
}

Run
RunRed(const std::vector<std::string>& names,
       const std::vector<std::string>& values,
       const std::vector<int64_t>& arrivals,
       const std::vector<uint32_t>& sizes,
       const std::vector<uint32_t>& ecn,
       const std::vector<int64_t>& rate_from,
       const std::vector<int64_t>& service,
       const std::vector<double>& draws,
       int64_t stream)
{
    Ptr<RedQueueDisc> red = Make<RedQueueDisc>(names, values);
    Driver driver(red, arrivals, sizes, ecn, rate_from, service);
    driver.Script(PeekPointer(red)->*get(RedQueueDisc_m_uv()), draws, stream);
    driver.afterArrival = [&](uint32_t) {
        RedQueueDisc& r = *PeekPointer(red);
        driver.run.avg.push_back(r.*get(RedQueueDisc_m_qAvg()));
        driver.run.count.push_back(r.*get(RedQueueDisc_m_count()));
        driver.run.old.push_back(r.*get(RedQueueDisc_m_old()));
        driver.run.max_p.push_back(r.*get(RedQueueDisc_m_curMaxP()));
    };
    driver.Go();
    Simulator::Destroy();
    return driver.run;
}

Run
RunCoDel(const std::vector<std::string>& names,
         const std::vector<std::string>& values,
         const std::vector<int64_t>& arrivals,
         const std::vector<uint32_t>& sizes,
         const std::vector<uint32_t>& ecn,
         const std::vector<int64_t>& rate_from,
         const std::vector<int64_t>& service)
{
    Ptr<CoDelQueueDisc> codel = Make<CoDelQueueDisc>(names, values);
    Driver driver(codel, arrivals, sizes, ecn, rate_from, service);
    driver.afterService = [&](uint32_t id) {
        CoDelQueueDisc& c = *PeekPointer(codel);
        driver.run.codel_id.push_back(id);
        driver.run.codel_count.push_back((c.*get(CoDelQueueDisc_m_count())).Get());
        driver.run.codel_lastcount.push_back((c.*get(CoDelQueueDisc_m_lastCount())).Get());
        driver.run.codel_dropping.push_back((c.*get(CoDelQueueDisc_m_dropping())).Get());
        driver.run.codel_drop_next.push_back((c.*get(CoDelQueueDisc_m_dropNext())).Get());
    };
    driver.Go();
    Simulator::Destroy();
    return driver.run;
}

// PIE updates its probability every Tupdate from time 0 (the constructor schedules the
// first update before the attributes are set, so Supdate is always 0 here); the state is
// sampled 1 ns after each update, before any trace event (the trace is on whole us).
Run
RunPie(const std::vector<std::string>& names,
       const std::vector<std::string>& values,
       const std::vector<int64_t>& arrivals,
       const std::vector<uint32_t>& sizes,
       const std::vector<uint32_t>& ecn,
       const std::vector<int64_t>& rate_from,
       const std::vector<int64_t>& service,
       const std::vector<double>& draws,
       int64_t stream,
       int64_t tupdate_ns,
       int64_t until_ns)
{
    Ptr<PieQueueDisc> pie = Make<PieQueueDisc>(names, values);
    Driver driver(pie, arrivals, sizes, ecn, rate_from, service);
    driver.Script(PeekPointer(pie)->*get(PieQueueDisc_m_uv()), draws, stream);
    std::function<void()> sample = [&]() {
        PieQueueDisc& p = *PeekPointer(pie);
        driver.run.pie_at.push_back(Simulator::Now().GetNanoSeconds() - 1);
        driver.run.pie_prob.push_back(p.*get(PieQueueDisc_m_dropProb()));
        driver.run.pie_qdelay.push_back((p.*get(PieQueueDisc_m_qDelay())).GetNanoSeconds());
        driver.run.pie_burst.push_back(
            (p.*get(PieQueueDisc_m_burstAllowance())).GetNanoSeconds());
        driver.run.pie_burst_state.push_back(p.*get(PieQueueDisc_m_burstState()));
    };
    for (int64_t t = 0; t <= until_ns; t += tupdate_ns)
    {
        Simulator::Schedule(NanoSeconds(t + 1), sample);
    }
    Simulator::Stop(NanoSeconds(until_ns + 1));
    driver.Go();
    Simulator::Destroy();
    return driver.run;
}

} // namespace p4aqm_ns3
