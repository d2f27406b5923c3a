# The example of docs/elixir.md, "Properties in ExUnit tests". Run it from riarc's top
# directory, after `rebar3 compile`, with the helper compiled to /tmp/riarc_case:
#   elixirc -pa "_build/default/lib/*/ebin" -o /tmp/riarc_case apps/riarc_harness/priv/elixir/riarc_case.ex
#   elixir -pa "_build/default/lib/*/ebin" -pa /tmp/riarc_case apps/riarc_harness/priv/elixir/shop_test.exs
# Two of its four tests fail, on purpose: their systems violate shop.prop.
ExUnit.start(seed: 0)

defmodule Shop.Worker do
  # Serves one order and tells the shop.
  def run(shop) do
    receive do
      order -> send(shop, {:served, order})
    end
  end
end

defmodule ShopTest do
  use ExUnit.Case
  # Every test of the module runs with the property watched on its process and all it spawns.
  use RiarcCase, property: Path.join(__DIR__, "shop.prop")

  test "an order is served" do
    worker = spawn(Shop.Worker, :run, [self()])
    send(worker, {:order, 1})
    assert_receive {:served, {:order, 1}}
  end

  test "an error reaches a worker (fails: the property is violated)" do
    worker = spawn(Shop.Worker, :run, [self()])
    send(worker, {:error, :out_of_stock})
    assert_receive {:served, {:error, :out_of_stock}}
  end
end

defmodule ShopCheckTest do
  use ExUnit.Case

  @property Path.join(__DIR__, "shop.prop")

  test "check/2 around a block" do
    Riarc.ExUnit.check(@property, fn ->
      worker = spawn(Shop.Worker, :run, [self()])
      send(worker, {:order, 2})
      assert_receive {:served, {:order, 2}}
    end)
  end

  test "check/2 around a block (fails: the property is violated)" do
    Riarc.ExUnit.check(@property, fn ->
      worker = spawn(Shop.Worker, :run, [self()])
      send(worker, {:error, :late})
      assert_receive {:served, {:error, :late}}
    end)
  end
end
