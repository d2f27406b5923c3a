defmodule Bank.Demo do
  @moduledoc """
  The example system: the supervised account (`Bank`) and `clients` client Tasks
  (`Bank.Client`) withdrawing 1, `n` times each, from a balance of `clients * n`.
  `main/3` is the system's root: it starts the tree, runs the clients, then shuts the
  tree down, so that the whole system ends.

  It opens with a burst: the account is paused (`:sys.suspend/1`, as for maintenance)
  until every client has queued its first withdrawal, then resumed, so the server finds
  them all in its mailbox at once. The racy account serves them all from the same
  balance before any settle Task writes back: every run of the racy mode pays out the
  same balance twice. The safe account serves the burst correctly.

      iex> Bank.Demo.main(4, 5, :safe)
      :ok
      iex> Bank.Demo.balances(4, 5, :racy) |> Bank.Demo.duplicates() |> List.last()
      19
  """

  @doc "The root of the example system (`mode` is `:racy` or `:safe`)."
  @spec main(pos_integer, pos_integer, Bank.mode()) :: :ok
  def main(clients, n, mode \\ :racy) do
    _ = balances(clients, n, mode)
    :ok
  end

  @doc "Runs the system; returns the new balances each client was told, client by client."
  @spec balances(pos_integer, pos_integer, Bank.mode()) :: [[term]]
  def balances(clients, n, mode) do
    Process.flag(:trap_exit, true)
    {:ok, sup} = Bank.Supervisor.start_link({mode, clients * n})
    :ok = :sys.suspend(Bank)
    root = self()
    pids =
      for _ <- 1..clients do
        {:ok, pid} = Task.start_link(Bank.Client, :run, [root, n])
        pid
      end

    # Race: a client's {:queued, _} is sent after its first withdrawal, so once all have
    # arrived every first withdrawal is in the account's mailbox, ahead of the resume.
    for pid <- pids, do: receive(do: ({:queued, ^pid} -> :ok))
    :ok = :sys.resume(Bank)
    # One client after the other: the result's order is the clients' order.
    replies = for pid <- pids, do: receive(do: ({:replies, ^pid, r} -> r))
    for pid <- pids, do: receive(do: ({:EXIT, ^pid, :normal} -> :ok))
    Process.unlink(sup)
    ref = Process.monitor(sup)
    Process.exit(sup, :shutdown)
    receive do: ({:DOWN, ^ref, :process, ^sup, _} -> :ok)
    for r <- replies, do: for({:ok, b} <- r, do: b)
  end

  @doc "The balances told to more than one client, ascending."
  @spec duplicates([[term]]) :: [term]
  def duplicates(balances) do
    all = List.flatten(balances)
    Enum.sort(Enum.uniq(all -- Enum.uniq(all)))
  end
end
